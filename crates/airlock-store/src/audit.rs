//! The audit log: one entry per exec, file write, network decision, ..., appended and read back
//! in pages.

use rusqlite::{params, Row};

use super::bounds::{check_name, encode_json, page_limit, MAX_DETAIL_BYTES, MAX_NAME_BYTES};
use super::error::StoreError;
use super::records::{AuditEntry, AuditRecord};
use super::Store;

impl Store {
    /// Appends an entry to the audit log; returns its id, larger than every earlier entry's.
    /// Refuses a summary over 64 KiB.
    pub fn add_audit(&self, entry: &AuditEntry) -> Result<i64, StoreError> {
        if let Some(id) = &entry.sandbox_id {
            check_name("the audited sandbox id", id, MAX_NAME_BYTES)?;
        }
        check_name("the audit kind", &entry.kind, MAX_NAME_BYTES)?;
        check_name("the audit actor", &entry.actor, MAX_NAME_BYTES)?;
        let summary = encode_json("the audit summary", &entry.summary, MAX_DETAIL_BYTES)?;
        self.conn
            .prepare_cached(
                "INSERT INTO audit (sandbox_id, time_ms, kind, actor, summary) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                entry.sandbox_id,
                entry.time_ms,
                entry.kind,
                entry.actor,
                summary
            ])?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Audit entries with ids above `after_id` (all, if `None`), about `sandbox_id` (any, if
    /// `None`), oldest first, at most `limit` (capped at [`MAX_PAGE`](super::MAX_PAGE)).
    pub fn audit(
        &self,
        sandbox_id: Option<&str>,
        after_id: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let after = after_id.unwrap_or(i64::MIN);
        let limit = page_limit(limit);
        let rows = match sandbox_id {
            Some(id) => self
                .conn
                .prepare_cached(
                    "SELECT id, sandbox_id, time_ms, kind, actor, summary FROM audit \
                     WHERE sandbox_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
                )?
                .query_map(params![id, after, limit], read)?
                .collect::<Result<Vec<_>, _>>()?,
            None => self
                .conn
                .prepare_cached(
                    "SELECT id, sandbox_id, time_ms, kind, actor, summary FROM audit \
                     WHERE id > ?1 ORDER BY id LIMIT ?2",
                )?
                .query_map(params![after, limit], read)?
                .collect::<Result<Vec<_>, _>>()?,
        };
        rows.into_iter().map(decode).collect()
    }
}

fn read(r: &Row<'_>) -> rusqlite::Result<(AuditRecord, String)> {
    let rec = AuditRecord {
        id: r.get(0)?,
        entry: AuditEntry {
            sandbox_id: r.get(1)?,
            time_ms: r.get(2)?,
            kind: r.get(3)?,
            actor: r.get(4)?,
            summary: serde_json::Value::Null,
        },
    };
    Ok((rec, r.get(5)?))
}

fn decode((mut rec, summary): (AuditRecord, String)) -> Result<AuditRecord, StoreError> {
    rec.entry.summary = serde_json::from_str(&summary).map_err(|_| StoreError::Corrupt {
        what: format!("audit entry {} has a summary that is not JSON", rec.id),
    })?;
    Ok(rec)
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
