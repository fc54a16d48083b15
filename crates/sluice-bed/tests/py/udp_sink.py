# Counts UDP payload bytes and CE-marked datagrams on port 9000 between FROM and TO seconds after the
# first datagram, for at most SECONDS: python3 udp_sink.py ADDR SECONDS FROM TO
import json, socket, sys, time
addr, seconds, t_from, t_to = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind((addr, 9000))
s.settimeout(0.2)
print("ready", flush=True)
end = time.monotonic() + seconds
first = None
total = packets = window_bytes = window_packets = ce = ect = 0
while time.monotonic() < end:
    try:
        data, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(1))
    except socket.timeout:
        continue
    now = time.monotonic()
    if first is None:
        first = now
    tos = anc[0][2][0] if anc else 0
    packets += 1
    total += len(data)
    if t_from <= now - first < t_to:
        window_bytes += len(data)
        window_packets += 1
        ce += (tos & 3) == 3
        ect += (tos & 3) in (1, 2)
print(json.dumps({"packets": packets, "bytes": total, "window_bytes": window_bytes,
                  "window_packets": window_packets, "window_seconds": t_to - t_from, "ce": ce, "ect": ect}))
