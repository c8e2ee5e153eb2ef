//! A sandbox's history: events appended in order and read back in pages.

use rusqlite::{params, Row};

use super::bounds::{check_name, encode_json, page_limit, MAX_DETAIL_BYTES, MAX_NAME_BYTES};
use super::clock::now_ms;
use super::error::StoreError;
use super::records::EventRecord;
use super::Store;

impl Store {
    /// Appends an event to a sandbox's history, stamped with the current time; returns its id,
    /// which is larger than every earlier event's. Refuses an unknown sandbox
    /// ([`StoreError::NotFound`]) and a detail over 64 KiB.
    pub fn add_event(
        &self,
        sandbox_id: &str,
        kind: &str,
        detail: &serde_json::Value,
    ) -> Result<i64, StoreError> {
        check_name("the event kind", kind, MAX_NAME_BYTES)?;
        let detail = encode_json("the event detail", detail, MAX_DETAIL_BYTES)?;
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO events (sandbox_id, time_ms, kind, detail) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![sandbox_id, now_ms(), kind, detail]);
        match inserted {
            Ok(_) => Ok(self.conn.last_insert_rowid()),
            Err(e) if is_foreign_key_violation(&e) => Err(StoreError::NotFound {
                id: sandbox_id.to_owned(),
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// A sandbox's events with ids above `after_id` (all, if `None`), oldest first, at most
    /// `limit` (capped at [`MAX_PAGE`](super::MAX_PAGE)).
    pub fn events(
        &self,
        sandbox_id: &str,
        after_id: Option<i64>,
        limit: u32,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let rows = self
            .conn
            .prepare_cached(
                "SELECT id, sandbox_id, time_ms, kind, detail FROM events \
                 WHERE sandbox_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
            )?
            .query_map(
                params![sandbox_id, after_id.unwrap_or(i64::MIN), page_limit(limit)],
                read,
            )?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(decode).collect()
    }
}

fn read(r: &Row<'_>) -> rusqlite::Result<(EventRecord, String)> {
    let rec = EventRecord {
        id: r.get(0)?,
        sandbox_id: r.get(1)?,
        time_ms: r.get(2)?,
        kind: r.get(3)?,
        detail: serde_json::Value::Null,
    };
    Ok((rec, r.get(4)?))
}

fn decode((mut rec, detail): (EventRecord, String)) -> Result<EventRecord, StoreError> {
    rec.detail = serde_json::from_str(&detail).map_err(|_| StoreError::Corrupt {
        what: format!("event {} has a detail that is not JSON", rec.id),
    })?;
    Ok(rec)
}

fn is_foreign_key_violation(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
    )
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
