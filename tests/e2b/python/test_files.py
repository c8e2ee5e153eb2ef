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
        # The box user's name as the gateway reports it: "user" (uid 1000) in a native box; a
        # microVM box's user has the server's uid (AIRLOCK_E2B_BOX_OWNER names it).
        assert info.owner == os.environ.get("AIRLOCK_E2B_BOX_OWNER", "user")
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
        assert httpx.get(tampered, timeout=30).status_code == 401
        assert httpx.get(upload, timeout=30).status_code == 401
        # An expiring URL works before its expiry.
        expiring = sbx.download_url("/home/user/uploaded.bin", use_signature_expiration=60)
        assert "signature_expiration=" in expiring
        assert httpx.get(expiring, timeout=30).content == BINARY
