//! Chunked request bodies (`Transfer-Encoding: chunked`) of plain HTTP
//! requests. The proxy decodes the client's framing and sends the chunks
//! on in a framing of its own (`SIZE\r\n`, data, `\r\n`, then `0\r\n\r\n`;
//! extensions and trailers dropped), so the server reads exactly the body
//! the proxy read, and whatever the client sent after it never reaches the
//! server as a request the proxy did not check. Chunk-size lines are
//! parsed by `httparse`.

use std::io::{self, BufRead, Read, Write};

/// Longest chunk-size line (size and extensions) or trailer line.
const MAX_LINE: u64 = 4096;
/// Trailer bytes read (and dropped) after the last chunk.
const MAX_TRAILERS: usize = 16 * 1024;

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

/// One line, `\n` included, of at most `max` bytes.
fn line(from: &mut impl BufRead, buf: &mut Vec<u8>, max: u64) -> io::Result<()> {
    buf.clear();
    from.by_ref().take(max).read_until(b'\n', buf)?;
    if buf.last() != Some(&b'\n') {
        return Err(invalid("chunk framing: line too long or cut short"));
    }
    Ok(())
}

/// Relay one chunked body from `from` to `to`. Stops after the last
/// chunk's trailers; an error means the body was malformed or cut short,
/// and the caller closes both ends (part of it may have been sent).
pub fn relay(from: &mut impl BufRead, to: &mut impl Write) -> io::Result<()> {
    let mut buf = Vec::new();
    loop {
        line(from, &mut buf, MAX_LINE)?;
        let size = match httparse::parse_chunk_size(&buf) {
            Ok(httparse::Status::Complete((n, size))) if n == buf.len() => size,
            _ => return Err(invalid("chunk framing: bad chunk-size line")),
        };
        if size == 0 {
            break;
        }
        write!(to, "{size:x}\r\n")?;
        if io::copy(&mut from.by_ref().take(size), to)? != size {
            return Err(invalid("chunk framing: body cut short"));
        }
        line(from, &mut buf, 2)?;
        if buf != b"\r\n" {
            return Err(invalid("chunk framing: no CRLF after chunk data"));
        }
        to.write_all(b"\r\n")?;
    }
    let mut trailers = 0;
    loop {
        line(from, &mut buf, MAX_LINE)?;
        if buf == b"\r\n" {
            break;
        }
        trailers += buf.len();
        if trailers > MAX_TRAILERS {
            return Err(invalid("chunk framing: trailers too long"));
        }
    }
    to.write_all(b"0\r\n\r\n")?;
    to.flush()
}

#[cfg(test)]
mod tests {
    use super::relay;

    fn run(input: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        relay(&mut &input[..], &mut out)
            .map(|()| out)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn bodies_are_reframed_and_stop_at_the_last_chunk() {
        assert_eq!(run(b"0\r\n\r\n").unwrap(), b"0\r\n\r\n");
        assert_eq!(
            run(b"5;name=val\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\nGET /secret HTTP/1.1\r\n\r\n")
                .unwrap(),
            b"5\r\nhello\r\na\r\n0123456789\r\n0\r\n\r\n"
        );
    }

    #[test]
    fn malformed_framing_is_refused() {
        for bad in [
            &b"zz\r\nhello\r\n0\r\n\r\n"[..],
            b"5\r\nhell",
            b"5\r\nhelloXX0\r\n\r\n",
            b"5\r\nhello\r\n",
            b"10000000000000000\r\n",
            b"0\r\n",
        ] {
            assert!(run(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let long = format!("1;{}\r\nx\r\n0\r\n\r\n", "e".repeat(5000));
        assert!(run(long.as_bytes()).is_err());
        let trailers = format!("0\r\n{}\r\n", "X-A: b\r\n".repeat(3000));
        assert!(run(trailers.as_bytes()).is_err());
    }
}
