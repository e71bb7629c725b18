"""debfetch.py — fetch.sh's two helpers that a shell does badly.

  debfetch.py archive SOURCELIST SOURCEPARTS CODENAME
      prints "URI SIGNED_BY" (SIGNED_BY "-" when none) of the machine's own
      Debian archive: the first enabled `deb` entry of its apt sources
      (one-line .list files and deb822 .sources files, as apt-config names
      them) whose suite is CODENAME (the machine's release, /etc/os-release)
      and that has the `main` component, excluding the security archive.
      No mirror is ever named by this project: the tier uses whatever the
      machine's apt uses. Exit 1 with one line on stderr when there is none.

  debfetch.py headers URI SIZE DEST
      the headers of a Debian package too large to download whole
      (nvidia-cuda-dev: 774 MB for CUDA 11.8, 934 MB for 12.4, of which
      /usr/include is the first ~1 MB of its data.tar.xz). Streams the .deb
      from URI (apt-get --print-uris, from the sources above), extracts every
      member under ./usr/include/ into DEST, and stops reading at the first
      member past it. A partial download cannot be checked against the
      SHA256 of the signed index: these headers are only ever given to the
      compiler (-fsyntax-only), never run; the driver and the CUPTI
      libraries the tier runs come from apt-get download, which checks
      them. SIZE (from the index) is checked against the server's
      Content-Length when it sends one. Exit 0 with at least one header
      extracted; else 1 and one line on stderr."""
import glob
import os
import sys
import tarfile
import urllib.request


def one_line_entries(path):
    """(types, uris, suites, components, signed_by) of a sources.list file."""
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        options = {}
        if "[" in line and "]" in line:
            head, rest = line.split("[", 1)
            opts, tail = rest.split("]", 1)
            for opt in opts.split():
                if "=" in opt:
                    key, value = opt.split("=", 1)
                    options[key.lower()] = value
            line = head + tail
        words = line.split()
        if len(words) < 3:
            continue
        yield ([words[0]], [words[1]], [words[2]], words[3:],
               options.get("signed-by", ""), options.get("enabled", "yes"))


def deb822_entries(path):
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return
    for paragraph in text.split("\n\n"):
        fields, key = {}, None
        for line in paragraph.splitlines():
            if line.startswith("#"):
                continue
            if line[:1] in (" ", "\t") and key:  # a continuation (an inline key)
                fields[key] += "\n" + line.strip()
                continue
            if ":" in line:
                key, value = line.split(":", 1)
                key = key.strip().lower()
                fields[key] = value.strip()
        if "uris" in fields:
            yield (fields.get("types", "").split(), fields["uris"].split(),
                   fields.get("suites", "").split(), fields.get("components", "").split(),
                   fields.get("signed-by", ""), fields.get("enabled", "yes"))


def archive(sourcelist, sourceparts, codename):
    files = [(sourcelist, one_line_entries)]
    files += [(p, one_line_entries) for p in sorted(glob.glob(os.path.join(sourceparts, "*.list")))]
    files += [(p, deb822_entries) for p in sorted(glob.glob(os.path.join(sourceparts, "*.sources")))]
    for path, reader in files:
        for types, uris, suites, components, signed_by, enabled in reader(path):
            if "deb" not in types or enabled.lower() == "no" or "main" not in components:
                continue
            if codename not in suites:
                continue
            for uri in uris:
                if "security" in uri:
                    continue
                key = signed_by if signed_by and "\n" not in signed_by and os.path.isfile(
                    signed_by) else "-"
                print(uri.rstrip("/"), key)
                return 0
    print(f"no Debian archive for '{codename}' in the machine's apt sources "
          f"({sourcelist}, {sourceparts})", file=sys.stderr)
    return 1


def headers(uri, size, dest):
    count = 0
    try:
        with urllib.request.urlopen(uri, timeout=60) as f:
            length = f.headers.get("Content-Length")
            if length is not None and int(length) != size:
                raise OSError(f"{uri}: {length} bytes, the index says {size}")
            if f.read(8) != b"!<arch>\n":
                raise OSError(f"{uri}: not a Debian package")
            while True:  # ar members: debian-binary, control.tar.*, data.tar.*
                header = f.read(60)
                if len(header) < 60:
                    raise OSError(f"{uri}: no data.tar member")
                name = header[:16].decode().strip().rstrip("/")
                member_size = int(header[48:58])
                if name.startswith("data.tar"):
                    break
                f.read(member_size + (member_size & 1))
            with tarfile.open(fileobj=f, mode="r|*") as tar:
                for member in tar:
                    path = member.name[2:] if member.name.startswith("./") else member.name
                    if path in ("", ".", "usr", "usr/include"):
                        continue
                    if not path.startswith("usr/include/"):
                        break  # the rest is libraries: stop downloading
                    if ".." in path.split("/"):
                        continue
                    target = os.path.join(dest, path)
                    if member.isdir():
                        os.makedirs(target, exist_ok=True)
                    elif member.issym():
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        if not os.path.lexists(target):
                            os.symlink(member.linkname, target)
                    elif member.isfile():
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        with tar.extractfile(member) as src, open(target, "wb") as out:
                            out.write(src.read())
                        count += 1
    except (OSError, tarfile.TarError, ValueError) as e:
        print(f"{uri}: {e}", file=sys.stderr)
        return 1
    if not count:
        print(f"{uri}: no /usr/include in the package", file=sys.stderr)
        return 1
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "archive":
        return archive(argv[2], argv[3], argv[4])
    if len(argv) == 5 and argv[1] == "headers":
        return headers(argv[2], int(argv[3]), argv[4])
    print("usage: debfetch.py archive SOURCELIST SOURCEPARTS CODENAME | "
          "headers URI SIZE DEST", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
