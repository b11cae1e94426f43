"""A tiny reverse proxy that adds a bearer token to every request, so a client that cannot send
an Authorization header (the MCP conformance suite, `npx conformance server --url ...`) can reach
a server that requires one (Tollgate's MCP gateway).

    python auth_proxy.py LISTEN_PORT TARGET_BASE_URL TOKEN_ENV_VAR

It listens on 127.0.0.1:LISTEN_PORT, prints `listening` on stdout once it accepts connections, and
forwards each request to TARGET_BASE_URL with its method, path, query, body and headers unchanged,
except that any Authorization header is replaced by `Authorization: Bearer $TOKEN_ENV_VAR`, and a
Host or Origin naming the proxy itself (`127.0.0.1:LISTEN_PORT`, `localhost:LISTEN_PORT`) is
rewritten to name the target, as if the client had reached it directly; any other Host or Origin
passes unchanged, so the target's DNS-rebinding checks still see what a hostile client sent.

It works at the HTTP/1.1 byte level with the standard library only: request heads are parsed (to
set the header) and request bodies framed by Content-Length or chunked encoding; responses are
copied back byte for byte as they arrive, so SSE (text/event-stream) streams pass chunk by chunk
without buffering. Each client connection gets its own connection to the target, and closing
either side closes the other.
"""

import asyncio
import os
import ssl
import sys
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024


class BadRequest(Exception):
    pass


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy bytes as they come until EOF, then close the writer."""
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def copy_exactly(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    while n > 0:
        chunk = await reader.read(min(n, 65536))
        if not chunk:
            raise asyncio.IncompleteReadError(b"", n)
        writer.write(chunk)
        await writer.drain()
        n -= len(chunk)


async def copy_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy a chunked body, chunk lines and trailers included, up to its end."""
    while True:
        size_line = await reader.readuntil(b"\r\n")
        writer.write(size_line)
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while True:  # trailers, ended by an empty line
                line = await reader.readuntil(b"\r\n")
                writer.write(line)
                if line == b"\r\n":
                    await writer.drain()
                    return
        await copy_exactly(reader, writer, size + 2)  # the data and its CRLF


def rewrite_head(
    head: bytes, authorization: bytes, prefix: bytes, hosts: dict[bytes, bytes]
) -> tuple[bytes, int | None, bool]:
    """Return the head to send upstream, the body's Content-Length, and whether it is chunked."""
    lines = head[:-4].split(b"\r\n")
    try:
        method, target, version = lines[0].split(b" ")
    except ValueError:
        raise BadRequest(lines[0]) from None
    if prefix and target.startswith(b"/"):
        target = prefix + target
    kept, length, chunked = [], None, False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        key = name.strip().lower()
        if key == b"authorization":
            continue
        if key in (b"host", b"origin"):
            seen = value.strip()
            for own, theirs in hosts.items():
                if seen in (own, b"http://" + own):
                    line = name + b": " + seen.replace(own, theirs)
        if key == b"content-length":
            length = int(value.strip())
        elif key == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
        kept.append(line)
    kept.append(b"Authorization: " + authorization)
    request_line = b" ".join([method, target, version])
    return b"\r\n".join([request_line, *kept]) + b"\r\n\r\n", length, chunked


async def forward_requests(
    client: asyncio.StreamReader,
    upstream: asyncio.StreamWriter,
    authorization: bytes,
    prefix: bytes,
    hosts: dict[bytes, bytes],
) -> None:
    """Forward request after request on one connection, each with the Authorization header set."""
    try:
        while True:
            try:
                head = await client.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return  # the client closed its connection between requests
            except asyncio.LimitOverrunError:
                raise BadRequest("request head too large") from None
            new_head, length, chunked = rewrite_head(head, authorization, prefix, hosts)
            upstream.write(new_head)
            await upstream.drain()
            if chunked:
                await copy_chunked(client, upstream)
            elif length:
                await copy_exactly(client, upstream, length)
    except (ConnectionError, asyncio.IncompleteReadError, BadRequest, ValueError):
        pass
    finally:
        upstream.close()


async def main() -> None:
    if len(sys.argv) != 4:
        sys.exit("usage: auth_proxy.py LISTEN_PORT TARGET_BASE_URL TOKEN_ENV_VAR")
    listen_port, target_url, token_var = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    token = os.environ.get(token_var)
    if not token:
        sys.exit(f"auth_proxy: environment variable {token_var} is not set")
    authorization = f"Bearer {token}".encode()
    target = urlsplit(target_url)
    if target.scheme not in ("http", "https") or not target.hostname:
        sys.exit(f"auth_proxy: not an http(s) URL: {target_url}")
    tls = ssl.create_default_context() if target.scheme == "https" else None
    port = target.port or (443 if tls else 80)
    prefix = target.path.rstrip("/").encode()
    netloc = target.netloc.encode()
    hosts = {f"{h}:{listen_port}".encode(): netloc for h in ("127.0.0.1", "localhost")}

    async def handle(
        client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(
                target.hostname, port, ssl=tls, limit=MAX_HEAD
            )
        except OSError as err:
            body = f"auth_proxy: cannot reach {target_url}: {err}\n".encode()
            client_writer.write(
                b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            client_writer.close()
            return
        # Responses flow back untouched while requests flow out; when either direction ends the
        # other is closed too, so a client abandoning an SSE stream is seen by the target.
        tasks = [
            asyncio.create_task(forward_requests(client_reader, up_writer, authorization, prefix, hosts)),
            asyncio.create_task(pipe(up_reader, client_writer)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        up_writer.close()
        client_writer.close()
        await asyncio.gather(*tasks, return_exceptions=True)

    listener = await asyncio.start_server(handle, "127.0.0.1", listen_port, limit=MAX_HEAD)
    print("listening", flush=True)
    async with listener:
        await listener.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
