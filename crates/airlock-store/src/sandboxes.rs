//! Sandbox records: create, read, list, and change their state, deadline and supervisor.

use std::collections::BTreeMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, params_from_iter, OptionalExtension, Row};

use super::bounds::{
    check_metadata, check_name, encode_json, page_limit, MAX_HASH_BYTES, MAX_NAME_BYTES,
    MAX_POLICY_BYTES,
};
use super::clock::now_ms;
use super::error::StoreError;
use super::records::{NewSandbox, SandboxFilter, SandboxRecord, SandboxState};
use super::Store;

/// The columns [`read_row`] reads, in order.
pub(super) const SANDBOX_COLUMNS: &str =
    "id, template, policy, token_hash, state, reason, created_ms, deadline_ms, \
                       ended_ms, supervisor_pid, boot_id";

/// `('killed','expired','dead','failed')`, for SQL.
fn terminal_list() -> String {
    let names: Vec<String> = SandboxState::ALL
        .into_iter()
        .filter(|s| s.is_terminal())
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    format!("({})", names.join(","))
}

/// A row as read, before its JSON and state are decoded.
pub(super) struct RawRow {
    id: String,
    template: String,
    policy: String,
    token_hash: String,
    state: String,
    reason: Option<String>,
    created_ms: i64,
    deadline_ms: i64,
    ended_ms: Option<i64>,
    supervisor_pid: Option<i32>,
    boot_id: Option<String>,
}

pub(super) fn read_row(r: &Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        id: r.get(0)?,
        template: r.get(1)?,
        policy: r.get(2)?,
        token_hash: r.get(3)?,
        state: r.get(4)?,
        reason: r.get(5)?,
        created_ms: r.get(6)?,
        deadline_ms: r.get(7)?,
        ended_ms: r.get(8)?,
        supervisor_pid: r.get(9)?,
        boot_id: r.get(10)?,
    })
}

impl Store {
    /// Records a new sandbox and returns it as stored, in one commit of its own or, inside
    /// [`Store::in_transaction`], as part of the caller's. Refuses a duplicate id
    /// ([`StoreError::DuplicateId`]) and inputs over the bounds in [`super::bounds`].
    pub fn insert_sandbox(&self, rec: &NewSandbox) -> Result<SandboxRecord, StoreError> {
        if self.conn.is_autocommit() {
            return self.in_transaction(|store| store.insert_sandbox(rec));
        }
        check_name("the sandbox id", &rec.id, MAX_NAME_BYTES)?;
        check_name("the template name", &rec.template, MAX_NAME_BYTES)?;
        check_name("the token hash", &rec.token_hash, MAX_HASH_BYTES)?;
        check_metadata(&rec.metadata)?;
        let policy = encode_json("the policy", &rec.policy, MAX_POLICY_BYTES)?;
        let ended_ms = rec.state.is_terminal().then_some(rec.created_ms);

        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO sandboxes (id, template, policy, token_hash, state, created_ms, \
                 deadline_ms, ended_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                rec.id,
                rec.template,
                policy,
                rec.token_hash,
                rec.state.as_str(),
                rec.created_ms,
                rec.deadline_ms,
                ended_ms
            ]);
        match inserted {
            Err(e) if is_unique_violation(&e) => {
                return Err(StoreError::DuplicateId { id: rec.id.clone() })
            }
            other => other?,
        };
        {
            let mut stmt = self.conn.prepare_cached(
                "INSERT INTO sandbox_metadata (sandbox_id, key, value) VALUES (?1, ?2, ?3)",
            )?;
            for (k, v) in &rec.metadata {
                stmt.execute(params![rec.id, k, v])?;
            }
        }
        Ok(SandboxRecord {
            id: rec.id.clone(),
            template: rec.template.clone(),
            policy: rec.policy.clone(),
            metadata: rec.metadata.clone(),
            token_hash: rec.token_hash.clone(),
            created_ms: rec.created_ms,
            deadline_ms: rec.deadline_ms,
            state: rec.state,
            reason: None,
            ended_ms,
            supervisor_pid: None,
            boot_id: None,
        })
    }

    /// The sandbox with this id, if recorded.
    pub fn get_sandbox(&self, id: &str) -> Result<Option<SandboxRecord>, StoreError> {
        let raw = self
            .conn
            .prepare_cached(&format!(
                "SELECT {SANDBOX_COLUMNS} FROM sandboxes WHERE id = ?1"
            ))?
            .query_row([id], read_row)
            .optional()?;
        raw.map(|raw| self.decode(raw)).transpose()
    }

    /// A sandbox's state and deadline, if recorded: what a change of its session is compared
    /// with, without reading (and decoding) its policy and metadata.
    pub fn sandbox_progress(&self, id: &str) -> Result<Option<(SandboxState, i64)>, StoreError> {
        let row = self
            .conn
            .prepare_cached("SELECT state, deadline_ms FROM sandboxes WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .optional()?;
        row.map(|(state, deadline)| {
            SandboxState::from_name(&state)
                .map(|s| (s, deadline))
                .ok_or_else(|| StoreError::Corrupt {
                    what: format!("sandbox {id} has the unknown state {state:?}"),
                })
        })
        .transpose()
    }

    /// The sandboxes in one of `filter.states` (any, if empty) that carry every pair in
    /// `filter.metadata`, newest first, at most `filter.limit` (capped at
    /// [`MAX_PAGE`](super::MAX_PAGE)).
    pub fn list_sandboxes(&self, filter: &SandboxFilter) -> Result<Vec<SandboxRecord>, StoreError> {
        check_metadata(&filter.metadata)?;
        let mut sql = format!("SELECT {SANDBOX_COLUMNS} FROM sandboxes s WHERE 1 = 1");
        let mut args: Vec<SqlValue> = Vec::new();
        if !filter.states.is_empty() {
            let marks = vec!["?"; filter.states.len()].join(",");
            sql.push_str(&format!(" AND s.state IN ({marks})"));
            args.extend(
                filter
                    .states
                    .iter()
                    .map(|st| SqlValue::Text(st.as_str().to_owned())),
            );
        }
        for (k, v) in &filter.metadata {
            sql.push_str(
                " AND EXISTS (SELECT 1 FROM sandbox_metadata m \
                 WHERE m.sandbox_id = s.id AND m.key = ? AND m.value = ?)",
            );
            args.push(SqlValue::Text(k.clone()));
            args.push(SqlValue::Text(v.clone()));
        }
        sql.push_str(" ORDER BY s.created_ms DESC, s.rowid DESC LIMIT ?");
        args.push(SqlValue::Integer(page_limit(filter.limit)));

        let raws = self
            .conn
            .prepare(&sql)?
            .query_map(params_from_iter(args), read_row)?
            .collect::<Result<Vec<_>, _>>()?;
        raws.into_iter().map(|raw| self.decode(raw)).collect()
    }

    /// Moves a sandbox to `state`, recording `reason` (replacing the previous one) and, for a
    /// terminal state, the time it ended. Refuses to move a sandbox that has already ended
    /// ([`StoreError::AlreadyEnded`]).
    pub fn set_state(
        &self,
        id: &str,
        state: SandboxState,
        reason: Option<&str>,
    ) -> Result<(), StoreError> {
        if let Some(reason) = reason {
            check_name("the reason", reason, super::MAX_METADATA_VALUE_BYTES)?;
        }
        let ended_ms = state.is_terminal().then(now_ms);
        let changed = self
            .conn
            .prepare_cached(&format!(
                "UPDATE sandboxes SET state = ?2, reason = ?3, ended_ms = ?4 \
                 WHERE id = ?1 AND state NOT IN {}",
                terminal_list()
            ))?
            .execute(params![id, state.as_str(), reason, ended_ms])?;
        if changed == 1 {
            return Ok(());
        }
        match self.get_sandbox(id)? {
            None => Err(StoreError::NotFound { id: id.to_owned() }),
            Some(rec) => Err(StoreError::AlreadyEnded {
                id: id.to_owned(),
                state: rec.state,
            }),
        }
    }

    /// Changes when a sandbox expires (milliseconds since the Unix epoch).
    pub fn set_deadline(&self, id: &str, deadline_ms: i64) -> Result<(), StoreError> {
        let changed = self
            .conn
            .prepare_cached("UPDATE sandboxes SET deadline_ms = ?2 WHERE id = ?1")?
            .execute(params![id, deadline_ms])?;
        found(id, changed)
    }

    /// Replaces a sandbox's resolved policy (its egress changed while it runs).
    pub fn set_policy(&self, id: &str, policy: &serde_json::Value) -> Result<(), StoreError> {
        let policy = encode_json("the policy", policy, MAX_POLICY_BYTES)?;
        let changed = self.conn.execute(
            "UPDATE sandboxes SET policy = ?2 WHERE id = ?1",
            params![id, policy],
        )?;
        found(id, changed)
    }

    /// Records which host process supervises a sandbox's box, and during which kernel boot, so
    /// [`Store::recover`] can tell after a restart whether the box can still be alive.
    pub fn set_supervisor(
        &self,
        id: &str,
        pid: Option<i32>,
        boot_id: Option<&str>,
    ) -> Result<(), StoreError> {
        if let Some(boot_id) = boot_id {
            check_name("the boot id", boot_id, MAX_NAME_BYTES)?;
        }
        let changed = self.conn.execute(
            "UPDATE sandboxes SET supervisor_pid = ?2, boot_id = ?3 WHERE id = ?1",
            params![id, pid, boot_id],
        )?;
        found(id, changed)
    }

    /// Decodes a row read by [`read_row`] and attaches its metadata.
    pub(super) fn decode(&self, raw: RawRow) -> Result<SandboxRecord, StoreError> {
        let state = SandboxState::from_name(&raw.state).ok_or_else(|| StoreError::Corrupt {
            what: format!("sandbox {:?} has unknown state {:?}", raw.id, raw.state),
        })?;
        let policy = serde_json::from_str(&raw.policy).map_err(|_| StoreError::Corrupt {
            what: format!("sandbox {:?} has a policy that is not JSON", raw.id),
        })?;
        let metadata = self
            .conn
            .prepare_cached("SELECT key, value FROM sandbox_metadata WHERE sandbox_id = ?1")?
            .query_map([&raw.id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<BTreeMap<String, String>, _>>()?;
        Ok(SandboxRecord {
            id: raw.id,
            template: raw.template,
            policy,
            metadata,
            token_hash: raw.token_hash,
            created_ms: raw.created_ms,
            deadline_ms: raw.deadline_ms,
            state,
            reason: raw.reason,
            ended_ms: raw.ended_ms,
            supervisor_pid: raw.supervisor_pid,
            boot_id: raw.boot_id,
        })
    }
}

fn found(id: &str, changed: usize) -> Result<(), StoreError> {
    if changed == 0 {
        Err(StoreError::NotFound { id: id.to_owned() })
    } else {
        Ok(())
    }
}

fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
    )
}

#[cfg(test)]
#[path = "sandboxes_tests.rs"]
mod tests;
