#!/usr/bin/env python3
"""Unpacks every DIR/debs/*.deb into DIR, as `dpkg-deb -x` would, for a machine without dpkg (check.sh):
a .deb is an ar archive whose member data.tar.{xz,gz,zst} holds the files (zstd needs the zstandard module).

  unpack_debs.py DIR
"""
import glob
import io
import sys
import tarfile


def members(data):
    assert data[:8] == b"!<arch>\n", "not an ar archive"
    pos = 8
    while pos + 60 <= len(data):
        name = data[pos:pos + 16].decode().strip().rstrip("/")
        size = int(data[pos + 48:pos + 58].decode().strip())
        yield name, data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)


def main():
    root = sys.argv[1]
    debs = sorted(glob.glob(root + "/debs/*.deb"))
    if not debs:
        raise SystemExit("unpack_debs.py: no .deb files in %s/debs" % root)
    for deb in debs:
        with open(deb, "rb") as f:
            data = f.read()
        for name, body in members(data):
            if name.startswith("data.tar"):
                if name.endswith(".zst"):
                    import zstandard  # noqa: PLC0415 (only for zstd-compressed packages)
                    body = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body)).read()
                tarfile.open(fileobj=io.BytesIO(body)).extractall(root)
        print("unpacked", deb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
