//! The backends this build of airlock has, chosen by kind.

use super::{Backend, BackendError};
use airlock_policy::BackendKind;
use serde::Serialize;
use std::sync::Arc;

/// Whether one kind of box can run here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "status", content = "why")]
pub enum Availability {
    /// Built in, and this host can run it.
    Available,
    /// Built in, but this host cannot run it (why).
    Unavailable(String),
    /// Not built in this airlock.
    NotBuilt,
}

/// One line of `airlock check`'s backend list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendReport {
    pub backend: BackendKind,
    #[serde(flatten)]
    pub availability: Availability,
}

/// The set of backends a program can start boxes with.
#[derive(Clone, Default)]
pub struct Backends {
    built: Vec<Arc<dyn Backend>>,
}

impl Backends {
    /// A set holding `backends` (one per kind; a later one of the same kind replaces it).
    pub fn new(backends: Vec<Arc<dyn Backend>>) -> Backends {
        let mut set = Backends::default();
        for b in backends {
            set.built.retain(|old| old.kind() != b.kind());
            set.built.push(b);
        }
        set
    }

    /// The backend of `kind`, or why there is none.
    pub fn select(&self, kind: BackendKind) -> Result<Arc<dyn Backend>, BackendError> {
        self.built
            .iter()
            .find(|b| b.kind() == kind)
            .cloned()
            .ok_or(BackendError::NotBuilt(kind))
    }

    /// The backend of `kind` if it is built and does not refuse this process outright
    /// ([`Backend::refusal`]).
    pub fn usable(&self, kind: BackendKind) -> Result<Arc<dyn Backend>, BackendError> {
        let backend = self.select(kind)?;
        match backend.refusal() {
            Some(why) => Err(why),
            None => Ok(backend),
        }
    }

    /// Every kind, whether it is built, and whether this host can run it (probes each built one).
    pub fn report(&self) -> Vec<BackendReport> {
        self.report_with(|_| None)
    }

    /// [`Backends::report`], taking what the caller already found out (`known`) instead of
    /// probing that kind again (`airlock check` has just started a native box).
    pub fn report_with(
        &self,
        known: impl Fn(BackendKind) -> Option<Result<(), String>>,
    ) -> Vec<BackendReport> {
        BackendKind::ALL
            .into_iter()
            .map(|kind| BackendReport {
                backend: kind,
                availability: match self.select(kind) {
                    Err(_) => Availability::NotBuilt,
                    Ok(b) => match known(kind).unwrap_or_else(|| b.probe()) {
                        Ok(()) => Availability::Available,
                        Err(why) => Availability::Unavailable(why),
                    },
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{BoxInstance, StartOptions, Template};
    use crate::Receipt;
    use airlock_policy::ResolvedPolicy;

    struct Probe(BackendKind, Result<(), String>);

    impl Backend for Probe {
        fn kind(&self) -> BackendKind {
            self.0
        }
        fn probe(&self) -> Result<(), String> {
            self.1.clone()
        }
        fn plan(&self, _: &ResolvedPolicy, _: &Template) -> Result<Receipt, BackendError> {
            Ok(Receipt::default())
        }
        fn start(
            &self,
            _: &ResolvedPolicy,
            _: &Template,
            _: &StartOptions,
        ) -> Result<Box<dyn BoxInstance>, BackendError> {
            Err(BackendError::Start("probe only".into()))
        }
    }

    #[test]
    fn a_kind_that_is_not_built_is_refused_with_a_sentence_naming_it() {
        let set = Backends::new(vec![Arc::new(Probe(BackendKind::Native, Ok(())))]);
        assert!(set.select(BackendKind::Native).is_ok());
        let err = set.select(BackendKind::Gvisor).err().unwrap();
        assert!(matches!(err, BackendError::NotBuilt(BackendKind::Gvisor)));
        let text = err.to_string();
        assert!(
            text.contains("gvisor") && text.contains("not built yet"),
            "{text}"
        );
    }

    #[test]
    fn the_report_lists_every_kind_with_why_it_cannot_run() {
        let set = Backends::new(vec![
            Arc::new(Probe(BackendKind::Native, Ok(()))),
            Arc::new(Probe(BackendKind::Wasm, Err("no CPython for WASI".into()))),
        ]);
        let report = set.report();
        assert_eq!(report.len(), BackendKind::ALL.len());
        assert_eq!(report[0].availability, Availability::Available);
        assert_eq!(report[1].availability, Availability::NotBuilt);
        assert_eq!(
            report[3].availability,
            Availability::Unavailable("no CPython for WASI".into())
        );
        // What the caller already knows is taken instead of probing again.
        let known =
            set.report_with(|k| (k == BackendKind::Native).then(|| Err("no userns".into())));
        assert_eq!(
            known[0].availability,
            Availability::Unavailable("no userns".into())
        );
        assert_eq!(known[3].availability, report[3].availability);
        let json = serde_json::to_value(&report[3]).unwrap();
        assert_eq!(json["backend"], "wasm");
        assert_eq!(json["status"], "unavailable");
        assert_eq!(json["why"], "no CPython for WASI");
    }
}
