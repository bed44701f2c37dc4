//! Throughput of the network proxy (`runtime::proxy`): a 256 MiB
//! download from a loopback server, directly and through an HTTP CONNECT
//! tunnel and a SOCKS5 one. Prints the median of RUNS runs (default 5)
//! in MiB/s and the proxy's share of the direct speed; the goal is at
//! least half (docs/performance.md).
//!
//!     cargo bench --bench proxy            (SIZE_MIB=256 RUNS=5)

#[cfg(unix)]
fn main() {
    bench::main();
}

#[cfg(not(unix))]
fn main() {}

#[cfg(unix)]
mod bench {
    use sbx::ir::NetRule;
    use sbx::runtime::proxy::{Config, Log, Proxy};
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpListener, TcpStream};
    use std::time::Instant;

    fn var(name: &str, default: u64) -> u64 {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    /// Serves `size` bytes to each connection once it has read the
    /// client's first line (so a tunnel is set up before data flows).
    fn server(size: u64) -> u16 {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut b = [0u8; 1];
                    while s.read(&mut b).unwrap_or(0) == 1 && b[0] != b'\n' {}
                    let chunk = vec![0x5a_u8; 256 * 1024];
                    let mut left = size;
                    while left > 0 {
                        let n = left.min(chunk.len() as u64) as usize;
                        if s.write_all(&chunk[..n]).is_err() {
                            return;
                        }
                        left -= n as u64;
                    }
                });
            }
        });
        port
    }

    fn drain(mut s: TcpStream, size: u64) -> f64 {
        let started = Instant::now();
        s.write_all(b"go\n").unwrap();
        let mut buf = vec![0u8; 256 * 1024];
        let mut got = 0u64;
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got += n as u64,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(got, size, "short download");
        got as f64 / (1 << 20) as f64 / started.elapsed().as_secs_f64()
    }

    fn via_connect(proxy: u16, port: u16) -> TcpStream {
        let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, proxy)).unwrap();
        write!(s, "CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").unwrap();
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut b).unwrap();
            head.push(b[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 200"));
        s
    }

    fn via_socks(proxy: u16, port: u16) -> TcpStream {
        let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, proxy)).unwrap();
        s.write_all(&[5, 1, 0]).unwrap();
        let mut m = [0u8; 2];
        s.read_exact(&mut m).unwrap();
        let mut req = vec![5, 1, 0, 1, 127, 0, 0, 1];
        req.extend_from_slice(&port.to_be_bytes());
        s.write_all(&req).unwrap();
        let mut rep = [0u8; 10];
        s.read_exact(&mut rep).unwrap();
        assert_eq!(rep[1], 0);
        s
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    pub fn main() {
        let size = var("SIZE_MIB", 256) << 20;
        let runs = var("RUNS", 5).max(1);
        let port = server(size);
        let rule = NetRule {
            index: 0,
            file: String::new(),
            line: 0,
            column: 0,
            host: "127.0.0.1".into(),
            scheme: None,
            port: Some(port),
            path_prefix: None,
            bind: false,
            allow: true,
        };
        let listen = || TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let proxy = Proxy::start(
            Config::new(&[rule], Log::new(sbx::runtime::proxy::Echo::Off)),
            listen(),
            listen(),
        )
        .unwrap();
        let (hp, sp) = proxy.ports();
        let mut direct = Vec::new();
        let mut connect = Vec::new();
        let mut socks = Vec::new();
        for _ in 0..runs {
            direct.push(drain(
                TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap(),
                size,
            ));
            connect.push(drain(via_connect(hp, port), size));
            socks.push(drain(via_socks(sp, port), size));
        }
        let (d, c, s) = (median(direct), median(connect), median(socks));
        println!("{} MiB download, median of {runs} runs:", size >> 20);
        println!("| path | MiB/s | share of direct |");
        println!("|---|---:|---:|");
        println!("| direct | {d:.0} | 100 % |");
        println!("| HTTP CONNECT | {c:.0} | {:.0} % |", c / d * 100.0);
        println!("| SOCKS5 | {s:.0} | {:.0} % |", s / d * 100.0);
        assert!(proxy.stop().is_empty());
    }
}
