#!/usr/bin/python3
"""An independent reader of TensorBoard event files, for tests/core/test_tensorboard.cpp.

usage: tb_read.py PROTO_DIR EVENTS_FILE...

Compiles PROTO_DIR/tb_minimal.proto with protoc into a temporary directory, reads every
TFRecord of each file (both masked CRC32Cs checked with the CRC computed here), parses each
record as an Event and prints one JSON document on stdout:
  {"files": [{"path", "torn", "events": [{"wall_time", "step", "file_version"?, "scalars"?,
              "texts"?, "hparams"?}]}]}
A record cut short at the end of a file ends that file with "torn": true, as TensorBoard's
reader does; a CRC mismatch or an unparseable record is an error (exit 1).
Exit 3 when google.protobuf is missing (python3-protobuf), 4 when protoc is missing.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

try:
    import google.protobuf  # noqa: F401
except ImportError:
    print("google.protobuf is missing (Debian package python3-protobuf)", file=sys.stderr)
    sys.exit(3)


def _table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_T = _table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(blob, path):
    """The payloads of a TFRecord file and whether its last record is cut short."""
    out = []
    at = 0
    while at < len(blob):
        if len(blob) - at < 12:
            return out, True
        header = blob[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", blob[at + 8:at + 12])
        if hcrc != masked(header):
            raise SystemExit("%s: byte %d: length CRC mismatch" % (path, at))
        if len(blob) - at - 12 < length + 4:
            return out, True
        data = blob[at + 12:at + 12 + length]
        (dcrc,) = struct.unpack("<I", blob[at + 12 + length:at + 16 + length])
        if dcrc != masked(data):
            raise SystemExit("%s: byte %d: data CRC mismatch" % (path, at))
        out.append(data)
        at += 16 + length
    return out, False


def num(x):
    return None if math.isnan(x) or math.isinf(x) else x


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    proto_dir = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run(["protoc", "-I", proto_dir, "-I", "/usr/include", "--python_out=" + tmp,
                            os.path.join(proto_dir, "tb_minimal.proto")], check=True)
        except FileNotFoundError:
            print("protoc is missing (Debian package protobuf-compiler)", file=sys.stderr)
            sys.exit(4)
        sys.path.insert(0, tmp)
        import tb_minimal_pb2 as pb

    out = {"files": []}
    for path in sys.argv[2:]:
        with open(path, "rb") as f:
            blob = f.read()
        payloads, torn = records(blob, path)
        events = []
        for data in payloads:
            ev = pb.Event()
            ev.ParseFromString(data)
            e = {"wall_time": ev.wall_time, "step": ev.step}
            what = ev.WhichOneof("what")
            if what == "file_version":
                e["file_version"] = ev.file_version
            elif what == "summary":
                for v in ev.summary.value:
                    kind = v.WhichOneof("value")
                    plugin = v.metadata.plugin_data.plugin_name
                    if kind == "simple_value":
                        e.setdefault("scalars", []).append([v.tag, num(v.simple_value)])
                    elif plugin == "text":
                        t = v.tensor
                        e.setdefault("texts", []).append({
                            "tag": v.tag, "dtype": t.dtype, "dims": [d.size for d in t.tensor_shape.dim],
                            "data_class": v.metadata.data_class,
                            "text": [s.decode("utf-8") for s in t.string_val]})
                    elif plugin == "hparams":
                        hp = pb.HParamsPluginData()
                        hp.ParseFromString(v.metadata.plugin_data.content)
                        if hp.WhichOneof("data") != "session_start_info":
                            raise SystemExit("%s: hparams summary without session_start_info" % path)
                        ssi = hp.session_start_info
                        e["hparams"] = {
                            "tag": v.tag, "version": hp.version, "start_time_secs": ssi.start_time_secs,
                            "tensor_dtype": v.tensor.dtype, "tensor_dims": [d.size for d in v.tensor.tensor_shape.dim],
                            "values": {k: [val.WhichOneof("kind"), getattr(val, val.WhichOneof("kind"))]
                                       for k, val in ssi.hparams.items()}}
                    else:
                        raise SystemExit("%s: summary value %r of unknown kind" % (path, v.tag))
            events.append(e)
        out["files"].append({"path": path, "torn": bool(torn), "events": events})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
