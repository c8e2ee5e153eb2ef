//! The request-body parsers as one entry point per route, for fuzzing (`fuzz/`) and tests: each
//! takes the raw bytes a client sent and returns what the server would act on, or its error.

use crate::requests::{parse, CreateRequest, ExecRequest, TimeoutRequest};
use crate::ApiError;

/// `POST /v1/sandboxes`: the body, the template, and the policy the box would get.
pub fn create_body(body: &[u8]) -> Result<(), ApiError> {
    let mut req: CreateRequest = parse(body, true)?;
    let (_, cwd) = crate::template::template(req.template.as_deref())?;
    req.check()?;
    crate::template::resolve_policy(&mut req, cwd, airlock_policy::BackendKind::Native)?;
    Ok(())
}

/// `POST /v1/sandboxes/{id}/exec`.
pub fn exec_body(body: &[u8]) -> Result<(), ApiError> {
    parse::<ExecRequest>(body, false)?.check()?;
    Ok(())
}

/// `POST /v1/sandboxes/{id}/timeout`.
pub fn timeout_body(body: &[u8]) -> Result<(), ApiError> {
    parse::<TimeoutRequest>(body, false)?.check()?;
    Ok(())
}

/// E2B gateway: a Connect request body (a stream of envelopes), fed in pieces of `split` bytes
/// as a chunked body would arrive; each message is decoded as envd's process and filesystem
/// requests. Returns how many envelopes were read before the end or the first refusal.
pub fn e2b_connect_stream(data: &[u8], split: usize) -> usize {
    let mut decoder = crate::e2b::connect::EnvelopeDecoder::default();
    let mut read = 0;
    for piece in data.chunks(split.max(1)) {
        decoder.push(piece);
        loop {
            match decoder.next() {
                Ok(Some(env)) => {
                    read += 1;
                    let _ = crate::e2b::connect::decode::<serde_json::Value>(&env.message);
                    crate::e2b::process::decode_any(&env.message);
                }
                Ok(None) => break,
                Err(_) => return read,
            }
        }
    }
    read
}

/// E2B control plane: `POST /v2/sandboxes` — the body, and the session it would plan (template,
/// env, metadata, network).
pub fn e2b_create_body(body: &[u8]) -> Result<(), String> {
    crate::e2b::control::plan_body(body)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// E2B ports: a request's `Host` header, as the gateway reads it under the domains
/// `localhost` and `localhost:7777`: the port and sandbox it names, if any.
pub fn e2b_port_host(host: &str) -> Option<(u16, String)> {
    let named = |d: &str| {
        crate::e2b::ingress::check_domain(d)
            .ok()
            .and_then(|d| crate::e2b::ingress::parse_host(host, &d))
    };
    named("localhost:7777")
        .or_else(|| named("localhost"))
        .map(|p| (p.port, p.sandbox))
}

/// E2B control plane: the list query string (`metadata`, `state`, `limit`, `nextToken`).
pub fn e2b_list_query(raw: &str) -> Result<(), String> {
    crate::e2b::control::list_query(raw)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// E2B's Template SDK: a build request body (`POST /v2/templates/{id}/builds/{build}`) planned
/// and rendered as a spec the way the server would (every COPY step given one file), and the
/// spec parsed back by the builder's own parser. Ok when it would be built.
pub fn e2b_template_build(body: &[u8]) -> Result<(), String> {
    use crate::e2b::templates::{archive::CopyEntry, steps};
    let start: steps::BuildStart = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let plan = steps::plan(&start, &|n| (n == "stored").then(|| n.to_string()))
        .map_err(|e| e.to_string())?;
    if let steps::Base::Stored(_) = plan.base {
        return Ok(());
    }
    let copies: Vec<Vec<CopyEntry>> = plan
        .copies()
        .map(|c| {
            vec![CopyEntry::File {
                rel: c.src.clone(),
                mode: 0o644,
                stored: "/nonexistent/0".into(),
            }]
        })
        .collect();
    let (spec, _) = steps::render(&plan, &copies).map_err(|e| e.to_string())?;
    airlock_template::TemplateSpec::parse(&spec, std::path::Path::new("fuzz"))
        .map_err(|e| format!("the rendered spec does not parse: {e}"))?;
    Ok(())
}

/// E2B's Template SDK: an uploaded COPY archive read as a build reads it, its files written
/// under `store_dir`, at most 1 MiB of them. Returns how many entries it kept.
pub fn e2b_template_archive(data: &[u8], store_dir: &std::path::Path) -> Result<usize, String> {
    crate::e2b::templates::archive::read_from(data, store_dir, 0, ("x", "/opt/x", "00"), 1 << 20)
        .map(|e| e.len())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_hosts_name_a_port_and_a_sandbox_or_nothing() {
        assert_eq!(
            e2b_port_host("8000-abc123.localhost:7777"),
            Some((8000, "abc123".into()))
        );
        assert_eq!(
            e2b_port_host("3000-abc.localhost"),
            Some((3000, "abc".into()))
        );
        for junk in [
            "",
            "localhost",
            "\u{0}-x.localhost",
            "99999-a.localhost",
            "1-a.b.localhost",
        ] {
            assert_eq!(e2b_port_host(junk), None, "{junk}");
        }
    }

    fn envelope(msg: &str) -> Vec<u8> {
        let mut v = vec![0u8];
        v.extend_from_slice(&u32::try_from(msg.len()).unwrap_or(0).to_be_bytes());
        v.extend_from_slice(msg.as_bytes());
        v
    }

    #[test]
    fn connect_streams_read_whole_however_split_and_stop_at_garbage() {
        let mut stream = envelope(r#"{"start":{"process":{"pid":1}}}"#);
        stream.extend(envelope(r#"{"data":{"input":{"stdin":"aGkK"}}}"#));
        stream.extend(envelope(
            r#"{"process":{"cmd":"/bin/bash"},"pty":{"size":{"rows":0,"cols":99999}}}"#,
        ));
        for split in 1..=stream.len() {
            assert_eq!(e2b_connect_stream(&stream, split), 3, "split {split}");
        }
        // A compressed-flag envelope is refused; nothing after it is read.
        let mut bad = vec![1u8, 0, 0, 0, 2];
        bad.extend_from_slice(b"{}");
        bad.extend(envelope("{}"));
        assert_eq!(e2b_connect_stream(&bad, 4), 0);
    }

    #[test]
    fn create_bodies_and_list_queries_are_checked() {
        assert!(e2b_create_body(b"{}").is_ok());
        assert!(e2b_create_body(br#"{"templateID":"no-such-template"}"#).is_err());
        assert!(e2b_create_body(b"not json").is_err());
        assert!(e2b_list_query("state=running&limit=5").is_ok());
        assert!(e2b_list_query("state=sleeping").is_err());
    }

    #[test]
    fn template_builds_with_hostile_strings_render_specs_the_builder_parses() {
        let nasty = [
            r#"echo 'quoted' "double" $HOME `id` \n"#,
            "line one\nline two\n\ttabbed",
            r#"''' """ ]] [[files]] name = "x""#,
            "\u{0} nul",
        ];
        for cmd in nasty {
            let body = serde_json::json!({
                "fromImage": "e2bdev/base",
                "steps": [
                    {"type": "RUN", "args": [cmd, "root"]},
                    {"type": "ENV", "args": ["V", cmd]},
                    {"type": "WORKDIR", "args": [format!("/opt/{cmd}")]},
                    {"type": "COPY", "args": [cmd, "/opt/x/", "", ""], "filesHash": "ab".repeat(32)},
                ],
                "startCmd": cmd,
            });
            if let Err(e) = e2b_template_build(body.to_string().as_bytes()) {
                assert!(!e.contains("does not parse"), "{cmd:?}: {e}");
            }
        }
        assert!(e2b_template_build(b"not json").is_err());
        assert!(e2b_template_build(br#"{"fromImage": "ubuntu:24.04"}"#).is_err());
        assert!(e2b_template_build(br#"{"fromImage": "stored", "steps": []}"#).is_ok());
        assert!(e2b_template_build(br#"{"fromImage": "e2bdev/base", "steps": []}"#).is_ok());
    }

    #[test]
    fn archives_of_any_bytes_are_read_or_refused() {
        let dir =
            std::env::temp_dir().join(format!("airlock-untrusted-tar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        for junk in [&b""[..], b"\x1f\x8b garbage", &[0xffu8; 512]] {
            assert!(e2b_template_archive(junk, &dir).is_err(), "{junk:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
