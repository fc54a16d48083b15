# Sends or receives sluice v1 data packets that ask for INT (layout: crates/sluice-wire/src/sluice.rs).
#   python3 sluice_int.py send DST_IP COUNT
#   python3 sluice_int.py recv ADDR COUNT     (prints one JSON list: [hops, rate, qlen, ts_ns] per packet)
import json, socket, struct, sys, time
mode, addr, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
HEADER = ">HBBHBBIIQQQQII"
if mode == "send":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = b"\x11" * 100
    for seq in range(count):
        header = struct.pack(HEADER, 0x534C, 1, 1, 1 << 1, 0, 0, 7, len(payload), seq * 100,
                             time.monotonic_ns(), 0, 0, 0, 0)
        s.sendto(header + payload, (addr, 9100))
        time.sleep(0.002)
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 9100))
    s.settimeout(3.0)
    print("ready", flush=True)
    seen = []
    try:
        while len(seen) < count:
            data = s.recv(2048)
            fields = struct.unpack(HEADER, data[:56])
            hops = fields[4]
            records = [struct.unpack(">QQQQ", data[56 + 32 * i:88 + 32 * i]) for i in range(hops)]
            payload = data[56 + 32 * hops:]
            ok = fields[0] == 0x534C and len(payload) == fields[7] and payload == b"\x11" * 100
            seen.append([hops, records[0][3] if records else 0, records[0][2] if records else 0, ok])
    except socket.timeout:
        pass
    print(json.dumps(seen))
