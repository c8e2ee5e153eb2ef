//! A real `airlock serve` driven over HTTP as a client would: create, exec, files, and the
//! server's own processes. Shared by the server suites.
#![allow(clippy::unwrap_used)]

use super::{ServeProcess, TempDir};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

pub struct Server {
    pub serve: ServeProcess,
    pub base: String,
    pub key: String,
    /// Whether this start printed an API key.
    pub printed_key: bool,
}

impl Server {
    pub fn start(data: &TempDir, extra: &[&str], key: Option<&str>) -> Server {
        Server::of(ServeProcess::start(data.path(), extra), key)
    }

    /// [`Server::start`] with `envs` added to the server's environment.
    pub fn start_env(data: &TempDir, extra: &[&str], envs: &[(&str, &str)]) -> Server {
        let mut cmd = std::process::Command::new(super::airlock_bin());
        cmd.envs(envs.iter().copied());
        Server::of(ServeProcess::start_with(cmd, data.path(), extra), None)
    }

    fn of(serve: ServeProcess, key: Option<&str>) -> Server {
        let printed_key = serve.printed_key.is_some();
        let key = serve
            .printed_key
            .clone()
            .or(key.map(str::to_string))
            .expect("an API key");
        Server {
            base: serve.base.clone(),
            serve,
            key,
            printed_key,
        }
    }

    pub fn pid(&self) -> i32 {
        self.serve.pid()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Sends a request with `auth` (None: no Authorization header); returns status and JSON.
    pub fn call_as(
        &self,
        auth: Option<&str>,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> (u16, Value) {
        let mut req = ureq::request(method, &self.url(path));
        if let Some(a) = auth {
            req = req.set("Authorization", &format!("Bearer {a}"));
        }
        let res = match body {
            Some(b) => req.set("Content-Type", "application/json").send_string(b),
            None => req.call(),
        };
        let resp = match res {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let status = resp.status();
        let text = resp.into_string().unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        self.call_as(Some(&self.key.clone()), method, path, body)
    }

    pub fn create(&self, body: &str) -> Value {
        let (status, v) = self.call("POST", "/v1/sandboxes", Some(body));
        assert_eq!(status, 201, "{v}");
        v
    }

    /// Runs a command; returns every line of the stream, each with the time it arrived.
    pub fn exec_as(
        &self,
        auth: &str,
        id: &str,
        body: Value,
    ) -> Result<Vec<(Instant, Value)>, (u16, Value)> {
        let res = ureq::post(&self.url(&format!("/v1/sandboxes/{id}/exec")))
            .set("Authorization", &format!("Bearer {auth}"))
            .send_string(&body.to_string());
        let resp = match res {
            Ok(r) => r,
            Err(ureq::Error::Status(code, r)) => {
                return Err((
                    code,
                    serde_json::from_str(&r.into_string().unwrap()).unwrap(),
                ))
            }
            Err(e) => panic!("exec: {e}"),
        };
        assert_eq!(resp.content_type(), "application/x-ndjson");
        let mut lines = Vec::new();
        for line in BufReader::new(resp.into_reader()).lines() {
            lines.push((
                Instant::now(),
                serde_json::from_str(&line.unwrap()).unwrap(),
            ));
        }
        Ok(lines)
    }

    pub fn exec(&self, id: &str, body: Value) -> Vec<(Instant, Value)> {
        self.exec_as(&self.key.clone(), id, body).unwrap()
    }

    /// stdout of a command that must succeed.
    pub fn sh(&self, id: &str, script: &str) -> String {
        let lines = self.exec(id, json!({"cmd": ["sh", "-c", script]}));
        let end = &lines.last().unwrap().1;
        assert_eq!(end["type"], "end");
        assert_eq!(end["exit_code"], 0, "{script}: {lines:?}");
        lines
            .iter()
            .filter(|(_, l)| l["type"] == "stdout")
            .map(|(_, l)| l["data"].as_str().unwrap())
            .collect()
    }

    /// The server's boxes' host processes (see [`super::box_hosts`]).
    pub fn sandbox_hosts(&self) -> Vec<i32> {
        super::box_hosts(self.pid())
    }

    pub fn vm_hwm_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// SIGTERM, then waits (bounded) for the server to exit.
    pub fn stop(&mut self) {
        self.serve.stop();
    }
}

pub fn cmdline(pid: i32) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .replace('\0', " ")
}

pub fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}
