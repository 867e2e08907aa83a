"""Put a file that root writes into place without following a link anywhere; runs on the host (3.8+).

    python3 staged_install.py SOURCE DEST MODE [SHA256]

SOURCE: the bytes, staged by the login user in a private `mktemp -d` directory (opened once, O_NOFOLLOW,
a regular file). DEST's folder is walked from / one folder at a time (O_NOFOLLOW): folders absent are made
(0755: the server's user reads uploaded models); a link on the way is followed only where it lies in a folder
only root may change (the install's `current`), never in one another user can write (apt's `_apt`-owned
lists/partial/, a model folder of the server's user). The copy is written into a fresh 0700 directory in the
deepest such root-only folder on DEST's disk, given MODE through its own descriptor (with SHA256: hashed as
it is copied, refused and nothing placed where its sha256 differs), then renamed over DEST. Where no
root-only folder lies on DEST's disk, it is staged under a random name beside DEST and must still be that
file once renamed. Every upload under sudo and every file the controller relays takes this way.
"""

import contextlib
import os
import stat
import sys

NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
FOLDER = os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW


class Refused(Exception):
    """DEST cannot be written without following a link another user controls, or SOURCE is not a file."""


def root_only(fd: int) -> bool:
    """A folder (by descriptor) that no one but root may change."""
    st = os.fstat(fd)
    return st.st_uid == 0 and not st.st_mode & 0o022


def walk(folder: str, hops: int = 0) -> list:
    """[(descriptor, path)] of each folder from / to folder, made where absent; a link followed only inside a
    root-only folder. The caller closes the descriptors."""
    if hops > 8:
        raise Refused(f"{folder}: too many links on the way")
    folder = os.path.normpath(folder)
    opened = [(os.open("/", FOLDER), "/")]
    path = "/"
    for part in [p for p in folder.split("/") if p and p != "."]:
        fd, path = opened[-1][0], os.path.join(path, part)
        try:
            opened.append((os.open(part, FOLDER, dir_fd=fd), path))
            continue
        except FileNotFoundError:
            os.mkdir(part, 0o755, dir_fd=fd)
            opened.append((os.open(part, FOLDER, dir_fd=fd), path))
            continue
        except OSError:
            if part == ".." or not stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                raise Refused(f"{path} is not a folder") from None
        if not root_only(fd):
            raise Refused(f"{path} is a link in a folder another user can write: nothing is written through it")
        target = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(part, dir_fd=fd)))
        rest = folder[len(path) :] if folder.startswith(path) else ""
        for fd_, _ in opened:
            os.close(fd_)
        return walk(target + rest, hops + 1)
    return opened


def stage_in(opened: list) -> tuple:
    """(the descriptor of the folder to stage in, the root-only folder holding it, its name): a fresh 0700
    directory in the deepest root-only folder on the destination's disk; (the destination's folder, None, "")
    where there is none."""
    folder_fd = opened[-1][0]
    device = os.fstat(folder_fd).st_dev
    best = None
    for fd, _ in opened:  # the deepest folder whose every folder above is root-only too
        if not root_only(fd):
            break
        if os.fstat(fd).st_dev == device:
            best = fd
    if best is None:
        return folder_fd, None, ""
    name = f".triton-stage.{os.urandom(8).hex()}"
    os.mkdir(name, 0o700, dir_fd=best)
    return os.open(name, FOLDER, dir_fd=best), best, name


def _hasher():
    """A sha256 hasher; hashlib imported only where a file is checked (most uploads are not)."""
    import hashlib

    return hashlib.sha256()


def install(source: str, dest: str, mode: int, sha256: str = "") -> None:
    """SOURCE's bytes at DEST (MODE), as the module says; raises Refused."""
    try:
        src = os.open(source, os.O_RDONLY | NOFOLLOW)
    except OSError as exc:
        raise Refused(f"{source} cannot be opened as a file ({exc.strerror})") from None
    opened: list = []
    try:
        if not stat.S_ISREG(os.fstat(src).st_mode):
            raise Refused(f"{source} is not a regular file")
        opened = walk(os.path.dirname(dest))
        folder_fd, name = opened[-1][0], os.path.basename(dest)
        stage_fd, holder, stage_name = stage_in(opened)
        staged = "file" if holder is not None else f".{name}.{os.urandom(8).hex()}.new"
        try:
            out = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600, dir_fd=stage_fd)
            digest = _hasher() if sha256 else None  # hashlib's import: about 4 ms of the script's 20
            with os.fdopen(out, "wb") as f:
                for chunk in iter(lambda: os.read(src, 1 << 20), b""):
                    if digest is not None:
                        digest.update(chunk)
                    f.write(chunk)
                if digest is not None and digest.hexdigest() != sha256:
                    raise Refused(
                        f"{dest}: the controller's copy has sha256 {digest.hexdigest()}, not {sha256}: removed, "
                        "nothing installed. Remove the controller's cached copy (controller_cache_dir) and run again"
                    )
                f.flush()
                os.fchmod(f.fileno(), mode)
                placed = os.fstat(f.fileno())
                os.rename(staged, name, src_dir_fd=stage_fd, dst_dir_fd=folder_fd)
                now = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)  # while open: its number is not reused
                if (now.st_dev, now.st_ino) != (placed.st_dev, placed.st_ino):
                    os.unlink(name, dir_fd=folder_fd)
                    raise Refused(f"{dest} was swapped while it was placed: removed")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(staged, dir_fd=stage_fd)
            if holder is not None:
                os.close(stage_fd)
                os.rmdir(stage_name, dir_fd=holder)
    finally:
        os.close(src)
        for fd, _ in opened:
            os.close(fd)


def main(source: str, dest: str, mode: str, sha256: str = "") -> int:
    os.umask(0o022)  # folders made on the way are 0755 whatever sudo's umask; the file is 0600 until its MODE
    try:
        install(source, dest, int(mode, 8), sha256)
    except Refused as exc:
        print(f"staged install: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
