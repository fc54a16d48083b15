# Sends paced UDP datagrams of 1400 bytes: python3 udp_send.py DST_IP RATE_BPS SECONDS TOS
import socket, sys, time
dst, rate, seconds, tos = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
payload = b"\x5a" * 1400
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
gap = len(payload) * 8 / rate
start = time.monotonic()
sent = 0
while True:
    now = time.monotonic()
    if now - start >= seconds:
        break
    due = start + sent * gap
    if due > now + 0.001:
        time.sleep(due - now)
        continue
    try:
        s.sendto(payload, (dst, 9000))
    except OSError:
        pass
    sent += 1
print(sent, flush=True)
