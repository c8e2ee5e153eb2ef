"""Files: read/write (text, bytes, streams, several files at once), list with depth, exists,
get_info, make_dir, rename, remove, watch_dir (sync and async), upload/download URLs."""
import io
import os

import httpx
import pytest

from conftest import wait_for

BINARY = bytes(range(256)) * 64 + b"\x00\xff end"


async def read_stream(sdk, stream):
    """Every chunk of a file read with format="stream" (sync iterator or async iterator)."""
    chunks = []
    if hasattr(stream, "__aiter__"):
        async for chunk in stream:
            chunks.append(bytes(chunk))
    else:
        for chunk in stream:
            chunks.append(bytes(chunk))
    return b"".join(chunks)


async def test_write_and_read_text(sdk):
    async with sdk.sandbox() as sbx:
        info = await sdk(sbx.files.write, "/home/user/notes.txt", "héllo\nworld\n")
        assert info.path == "/home/user/notes.txt"
        assert info.name == "notes.txt"
        assert await sdk(sbx.files.read, "/home/user/notes.txt") == "héllo\nworld\n"
        # The file is really in the box: a command sees it, through a relative path too.
        assert (await sdk(sbx.commands.run, "cat notes.txt")).stdout == "héllo\nworld\n"
        # A relative path resolves against the user's home.
        assert await sdk(sbx.files.read, "notes.txt") == "héllo\nworld\n"
        # Writing creates missing parent directories.
        await sdk(sbx.files.write, "/home/user/deep/er/file.txt", "x")
        assert (await sdk(sbx.commands.run, "cat /home/user/deep/er/file.txt")).stdout == "x"


async def test_write_and_read_bytes_and_streams(sdk):
    async with sdk.sandbox() as sbx:
        await sdk(sbx.files.write, "/home/user/blob.bin", BINARY)
        assert bytes(await sdk(sbx.files.read, "/home/user/blob.bin", format="bytes")) == BINARY
        digest = (await sdk(sbx.commands.run, "sha256sum /home/user/blob.bin | cut -d' ' -f1")).stdout.strip()
        import hashlib

        assert digest == hashlib.sha256(BINARY).hexdigest()
        # A file-like object is uploaded as a stream.
        big = os.urandom(3 << 20)
        await sdk(sbx.files.write, "/home/user/big.bin", io.BytesIO(big))
        stream = await sdk(sbx.files.read, "/home/user/big.bin", format="stream")
        assert await read_stream(sdk, stream) == big
        size = (await sdk(sbx.commands.run, "stat -c %s /home/user/big.bin")).stdout.strip()
        assert size == str(len(big))


async def test_write_several_files_at_once(sdk):
    async with sdk.sandbox() as sbx:
        infos = await sdk(sbx.files.write_files, [
            {"path": "/home/user/many/a.txt", "data": "first"},
            {"path": "/home/user/many/b.bin", "data": b"\x01\x02\x03"},
            {"path": "/home/user/many/sub/c.txt", "data": "third"},
        ])
        assert sorted(i.path for i in infos) == ["/home/user/many/a.txt", "/home/user/many/b.bin", "/home/user/many/sub/c.txt"]
        out = await sdk(sbx.commands.run, "cat /home/user/many/a.txt; od -An -tx1 /home/user/many/b.bin; cat /home/user/many/sub/c.txt")
        assert out.stdout.split() == ["first", "01", "02", "03", "third"]


async def test_list_with_depth(sdk):
    FileType = sdk.e2b.FileType
    async with sdk.sandbox() as sbx:
        await sdk(sbx.commands.run, "mkdir -p /home/user/tree/x/y && echo 1 > /home/user/tree/top.txt && echo 22 > /home/user/tree/x/mid.txt && echo 3 > /home/user/tree/x/y/low.txt")
        shallow = await sdk(sbx.files.list, "/home/user/tree")
        assert {(e.name, e.type) for e in shallow} == {("top.txt", FileType.FILE), ("x", FileType.DIR)}
        top = next(e for e in shallow if e.name == "top.txt")
        assert top.path == "/home/user/tree/top.txt"
        assert top.size == 2
        deeper = await sdk(sbx.files.list, "/home/user/tree", depth=2)
        assert {e.path for e in deeper} == {"/home/user/tree/top.txt", "/home/user/tree/x", "/home/user/tree/x/mid.txt", "/home/user/tree/x/y"}
        deepest = await sdk(sbx.files.list, "/home/user/tree", depth=3)
        assert "/home/user/tree/x/y/low.txt" in {e.path for e in deepest}
        with pytest.raises(sdk.e2b.NotFoundException):
            await sdk(sbx.files.list, "/home/user/no-such-dir")


async def test_exists_get_info_make_dir_rename_remove(sdk):
    FileType = sdk.e2b.FileType
    async with sdk.sandbox() as sbx:
        assert await sdk(sbx.files.exists, "/home/user/fresh") is False
        assert await sdk(sbx.files.make_dir, "/home/user/fresh/nested") is True
        assert await sdk(sbx.files.make_dir, "/home/user/fresh/nested") is False, "already exists"
        assert await sdk(sbx.files.exists, "/home/user/fresh/nested") is True
        await sdk(sbx.files.write, "/home/user/fresh/f.txt", "12345")
        info = await sdk(sbx.files.get_info, "/home/user/fresh/f.txt")
        assert (info.name, info.type, info.path, info.size) == ("f.txt", FileType.FILE, "/home/user/fresh/f.txt", 5)
        # The box user's name as the gateway reports it: "user" (uid 1000), in every kind of box.
        assert info.owner == "user"
        dir_info = await sdk(sbx.files.get_info, "/home/user/fresh/nested")
        assert dir_info.type == FileType.DIR
        moved = await sdk(sbx.files.rename, "/home/user/fresh/f.txt", "/home/user/fresh/nested/g.txt")
        assert moved.path == "/home/user/fresh/nested/g.txt"
        assert await sdk(sbx.files.exists, "/home/user/fresh/f.txt") is False
        assert await sdk(sbx.files.read, "/home/user/fresh/nested/g.txt") == "12345"
        await sdk(sbx.files.remove, "/home/user/fresh/nested/g.txt")
        assert await sdk(sbx.files.exists, "/home/user/fresh/nested/g.txt") is False
        await sdk(sbx.files.remove, "/home/user/fresh")
        assert (await sdk(sbx.commands.run, "test -e /home/user/fresh || echo gone")).stdout == "gone\n"
        with pytest.raises(sdk.e2b.NotFoundException):
            await sdk(sbx.files.get_info, "/home/user/fresh")
        with pytest.raises(sdk.e2b.NotFoundException):
            await sdk(sbx.files.read, "/home/user/never-written.txt")


async def test_watch_dir_sees_a_file_a_command_creates(sdk):
    Created = sdk.e2b.FilesystemEventType.CREATE
    async with sdk.sandbox() as sbx:
        await sdk(sbx.files.make_dir, "/home/user/watched")
        if sdk.is_async:
            events = []
            handle = await sbx.files.watch_dir("/home/user/watched", on_event=events.append)
            await sbx.commands.run("echo hi > /home/user/watched/new.txt; mkdir /home/user/watched/sub")
            await wait_for("the watch reports new.txt", lambda: any(e.name == "new.txt" and e.type == Created for e in events))
            await wait_for("the watch reports sub", lambda: any(e.name == "sub" and e.type == Created for e in events))
            await handle.stop()
        else:
            handle = sbx.files.watch_dir("/home/user/watched")
            sbx.commands.run("echo hi > /home/user/watched/new.txt; mkdir /home/user/watched/sub")
            events = []

            def poll():
                events.extend(handle.get_new_events())
                return {"new.txt", "sub"} <= {e.name for e in events if e.type == Created}

            await wait_for("the watch reports new.txt and sub", poll)
            handle.stop()


async def test_watch_dir_recursive(sdk):
    async with sdk.sandbox() as sbx:
        await sdk(sbx.commands.run, "mkdir -p /home/user/rw/inner")
        names = []
        if sdk.is_async:
            handle = await sbx.files.watch_dir("/home/user/rw", on_event=lambda e: names.append(e.name), recursive=True)
            await sbx.commands.run("echo x > /home/user/rw/inner/leaf.txt")
            await wait_for("the recursive watch reports inner/leaf.txt", lambda: "inner/leaf.txt" in names)
            await handle.stop()
        else:
            handle = sbx.files.watch_dir("/home/user/rw", recursive=True)
            sbx.commands.run("echo x > /home/user/rw/inner/leaf.txt")

            def poll():
                names.extend(e.name for e in handle.get_new_events())
                return "inner/leaf.txt" in names

            await wait_for("the recursive watch reports inner/leaf.txt", poll)
            handle.stop()


async def test_watch_dir_of_a_missing_directory_fails(sdk):
    async with sdk.sandbox() as sbx:
        with pytest.raises(sdk.e2b.NotFoundException):
            if sdk.is_async:
                await sbx.files.watch_dir("/home/user/absent", on_event=lambda e: None)
            else:
                sbx.files.watch_dir("/home/user/absent")


async def test_upload_and_download_urls(sdk):
    async with sdk.sandbox() as sbx:
        upload = sbx.upload_url("/home/user/uploaded.bin")
        assert upload.startswith(os.environ["E2B_SANDBOX_URL"])
        assert "signature=" in upload and sbx.sandbox_id not in upload
        r = httpx.post(upload, files={"file": ("uploaded.bin", BINARY)}, timeout=30)
        assert r.status_code == 200, r.text
        assert (await sdk(sbx.commands.run, "stat -c %s /home/user/uploaded.bin")).stdout.strip() == str(len(BINARY))
        download = sbx.download_url("/home/user/uploaded.bin")
        r = httpx.get(download, timeout=30)
        assert r.status_code == 200
        assert r.content == BINARY
        # The signature covers path and operation: a changed path or an upload URL used to read fails.
        tampered = download.replace("uploaded.bin", "other.bin")
        r = httpx.get(tampered, timeout=30)
        # envd's words, which users and scripts compare, come first.
        assert r.status_code == 401 and r.json()["message"].startswith("invalid signature"), r.text
        assert httpx.get(upload, timeout=30).status_code == 401
        unsigned = download.split("&signature=")[0].split("?signature=")[0]
        r = httpx.get(unsigned, timeout=30)
        assert r.status_code == 401, r.text
        assert r.json()["message"].startswith("missing signature query parameter"), r.text
        expired = sbx.download_url("/home/user/uploaded.bin", use_signature_expiration=-5)
        r = httpx.get(expired, timeout=30)
        assert r.status_code == 401 and r.json()["message"].startswith("signature is already expired"), r.text
        # An expiring URL works before its expiry.
        expiring = sbx.download_url("/home/user/uploaded.bin", use_signature_expiration=60)
        assert "signature_expiration=" in expiring
        assert httpx.get(expiring, timeout=30).content == BINARY


async def test_remove_of_a_missing_path_succeeds_as_envd(sdk):
    async with sdk.sandbox() as sbx:
        # envd removes with Go's os.RemoveAll: what is not there is already removed.
        await sdk(sbx.files.remove, "/home/user/never-was")
        await sdk(sbx.files.remove, "/home/user/no/such/tree")
        assert await sdk(sbx.files.exists, "/home/user/never-was") is False


async def test_mode_is_the_permission_bits(sdk):
    async with sdk.sandbox() as sbx:
        await sdk(sbx.files.make_dir, "/home/user/perm")
        await sdk(sbx.commands.run, "chmod 750 /home/user/perm && echo x > /home/user/perm/f && chmod 640 /home/user/perm/f")
        d = await sdk(sbx.files.get_info, "/home/user/perm")
        # envd sends Go's Mode().Perm(): 0o750 is 488, without Go's ModeDir bit (1 << 31).
        assert (d.mode, d.permissions) == (0o750, "drwxr-x---")
        f = await sdk(sbx.files.get_info, "/home/user/perm/f")
        assert (f.mode, f.permissions) == (0o640, "-rw-r-----")
        listed = {e.name: e.mode for e in await sdk(sbx.files.list, "/home/user")}
        assert listed["perm"] == 0o750


async def test_get_info_of_a_symlink_describes_its_target(sdk):
    FileType = sdk.e2b.FileType
    async with sdk.sandbox() as sbx:
        await sdk(sbx.commands.run, "cd /home/user && mkdir -p real/dir && echo hi > real/t.txt && ln -s real/t.txt rel && ln -s /home/user/real/dir absdir && ln -s rel chain && ln -s gone dangling")
        rel = await sdk(sbx.files.get_info, "/home/user/rel")
        # envd: the type of what the link resolves to, and the absolute resolved path.
        assert (rel.type, rel.symlink_target) == (FileType.FILE, "/home/user/real/t.txt")
        absdir = await sdk(sbx.files.get_info, "/home/user/absdir")
        assert (absdir.type, absdir.symlink_target) == (FileType.DIR, "/home/user/real/dir")
        chain = await sdk(sbx.files.get_info, "/home/user/chain")
        assert (chain.type, chain.symlink_target) == (FileType.FILE, "/home/user/real/t.txt")
        # The link itself is still what is described: its own path and name.
        assert (rel.path, rel.name) == ("/home/user/rel", "rel")
        listed = {e.name: (e.type, e.symlink_target) for e in await sdk(sbx.files.list, "/home/user")}
        assert listed["rel"] == (FileType.FILE, "/home/user/real/t.txt")
        assert listed["dangling"][0] == FileType.SYMLINK, "a dangling link stays a symlink"


async def test_file_metadata_is_kept_as_xattrs(sdk):
    async with sdk.sandbox() as sbx:
        if os.environ.get("AIRLOCK_E2B_BACKEND") in ("microvm", "gvisor"):
            # The microVM's guest kernel (Debian 12's 6.1) keeps no user.* extended attributes
            # on the tmpfs under /home/user (Linux 6.6 added them), and neither does gVisor's
            # Sentry on its own tmpfs (setxattr answers EOPNOTSUPP): the upload says so (409)
            # rather than drop the metadata; the file itself is written.
            with pytest.raises(sdk.e2b.SandboxException, match="keeps no user extended attributes"):
                await sdk(sbx.files.write, "/home/user/meta.txt", "x", metadata={"owner": "alice"})
            assert await sdk(sbx.files.read, "/home/user/meta.txt") == "x"
            assert (await sdk(sbx.files.get_info, "/home/user/meta.txt")).metadata is None
            return
        info = await sdk(sbx.files.write, "/home/user/meta.txt", "x", metadata={"Owner": "alice", "stage": "raw"})
        # Keys are lowercased, as envd does; the answer carries what was stored.
        assert info.metadata == {"owner": "alice", "stage": "raw"}
        got = await sdk(sbx.files.get_info, "/home/user/meta.txt")
        assert got.metadata == {"owner": "alice", "stage": "raw"}
        # They are real extended attributes on the file inside the box.
        xattrs = await sdk(sbx.commands.run, "python3 -c \"import os; print(sorted((k, os.getxattr('/home/user/meta.txt', k).decode()) for k in os.listxattr('/home/user/meta.txt')))\"")
        assert xattrs.stdout.strip() == "[('user.e2b.owner', 'alice'), ('user.e2b.stage', 'raw')]"
        # Kept across a rename, listed, and one set out of band inside the box shows too.
        moved = await sdk(sbx.files.rename, "/home/user/meta.txt", "/home/user/moved.txt")
        assert moved.metadata == {"owner": "alice", "stage": "raw"}
        await sdk(sbx.commands.run, "python3 -c \"import os; os.setxattr('/home/user/moved.txt', 'user.e2b.extra', b'1')\"")
        listed = {e.name: e.metadata for e in await sdk(sbx.files.list, "/home/user")}
        assert listed["moved.txt"] == {"owner": "alice", "stage": "raw", "extra": "1"}
        # A file written without metadata has none; several files at once all get it.
        assert (await sdk(sbx.files.get_info, "/home/user/moved.txt")).metadata["extra"] == "1"
        plain = await sdk(sbx.files.write, "/home/user/plain.txt", "y")
        assert plain.metadata is None
        assert (await sdk(sbx.files.get_info, "/home/user/plain.txt")).metadata is None
        many = await sdk(sbx.files.write_files, [{"path": "/home/user/m1", "data": "1"}, {"path": "/home/user/m2", "data": "2"}], metadata={"batch": "7"})
        assert [i.metadata for i in many] == [{"batch": "7"}, {"batch": "7"}]
        assert (await sdk(sbx.files.get_info, "/home/user/m2")).metadata == {"batch": "7"}


async def test_a_polled_watcher_sees_every_completed_change_and_chmod(sdk):
    Type = sdk.e2b.FilesystemEventType
    async with sdk.sandbox() as sbx:
        await sdk(sbx.files.make_dir, "/home/user/polled")
        if sdk.is_async:
            # The async SDK streams events: CHMOD arrives on the stream.
            events = []
            handle = await sbx.files.watch_dir("/home/user/polled", on_event=events.append)
            await sbx.commands.run("echo a > /home/user/polled/f && chmod 600 /home/user/polled/f")
            await wait_for("the watch reports CHMOD of f", lambda: any(e.name == "f" and e.type == Type.CHMOD for e in events))
            await handle.stop()
            return
        handle = sbx.files.watch_dir("/home/user/polled")
        for round_ in range(3):
            # Changes that completed before the poll are all in its answer: no waiting.
            sbx.commands.run(f"for i in $(seq 1 40); do echo $i > /home/user/polled/r{round_}-$i; done; chmod 600 /home/user/polled/r{round_}-1")
            events = handle.get_new_events()
            created = {e.name for e in events if e.type == Type.CREATE}
            assert created == {f"r{round_}-{i}" for i in range(1, 41)}, sorted(created)
            assert any(e.name == f"r{round_}-1" and e.type == Type.CHMOD for e in events)
        # A write through the SDK is a completed change too.
        sbx.files.write("/home/user/polled/sdk.txt", "z")
        assert "sdk.txt" in {e.name for e in handle.get_new_events() if e.type == Type.CREATE}
        handle.stop()
