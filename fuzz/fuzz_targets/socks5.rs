//! SOCKS5: the greeting, then the request on the bytes after it.
#![no_main]

use airlock_proxy::socks5::{parse_greeting, parse_request, reply, Reply, SocksHost, MAX_DOMAIN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The request parser alone, as if the greeting had been read separately.
    check_request(data);
    match parse_greeting(data) {
        Ok(Some((_, consumed))) => {
            assert!((3..=257).contains(&consumed) && consumed <= data.len());
            check_request(&data[consumed..]);
        }
        Ok(None) => assert!(data.len() < 257),
        Err(e) => {
            let _ = e.reply();
        }
    }
});

fn check_request(data: &[u8]) {
    match parse_request(data) {
        Ok(Some(((host, port), consumed))) => {
            assert!(consumed <= data.len() && consumed <= 262);
            assert_ne!(port, 0);
            if let SocksHost::Domain(name) = host {
                assert!((1..=MAX_DOMAIN).contains(&name.len()));
                assert!(!name.chars().any(|c| c.is_control()));
            }
        }
        Ok(None) => assert!(data.len() < 262),
        Err(e) => {
            let code = e.reply().unwrap_or(Reply::GeneralFailure);
            assert_eq!(reply(code, None).len(), 10);
        }
    }
}
