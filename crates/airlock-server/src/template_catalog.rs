//! The templates a server's sandboxes can start from: the stored ones (its data dir's template
//! store) by name, and aliases (`--template-alias base=code-interpreter`) that point the names
//! clients know (`base`, `code-interpreter-v1`) at stored ones. A name that is neither is one of
//! the built-in names on the host's own system dirs, or an error that lists what exists.

use airlock_runtime::backend::Template;
use airlock_template::TemplateStore;
use std::collections::BTreeMap;

/// The server's templates.
#[derive(Debug, Clone, Default)]
pub struct TemplateCatalog {
    store: Option<TemplateStore>,
    aliases: BTreeMap<String, String>,
}

impl TemplateCatalog {
    /// No stored templates: every sandbox starts on the host's system dirs.
    pub fn empty() -> TemplateCatalog {
        TemplateCatalog::default()
    }

    /// The templates of `store`, with `aliases` (alias → stored name). Fails when an alias
    /// names a template the store does not have.
    pub fn new(
        store: TemplateStore,
        aliases: BTreeMap<String, String>,
    ) -> Result<TemplateCatalog, String> {
        for (alias, name) in &aliases {
            store
                .inspect(name)
                .map_err(|e| format!("--template-alias {alias}={name}: {e}"))?;
        }
        Ok(TemplateCatalog {
            store: Some(store),
            aliases,
        })
    }

    /// The stored template `name` stands for (itself or through an alias), or `None` when it
    /// is not stored (a built-in name, or unknown).
    pub fn lookup(&self, name: &str) -> Result<Option<Template>, String> {
        let Some(store) = &self.store else {
            return Ok(None);
        };
        // E2B's `NAME:latest` is the store name `NAME` (see e2b::templates::names).
        let name = name.strip_suffix(":latest").unwrap_or(name);
        let target = self.aliases.get(name).map(String::as_str).unwrap_or(name);
        if name == "host"
            || !store
                .names()
                .unwrap_or_default()
                .iter()
                .any(|n| n == target)
        {
            if self.aliases.contains_key(name) {
                return Err(format!(
                    "template {name:?} is an alias of {target:?}, which is no longer stored"
                ));
            }
            return Ok(None);
        }
        store.get(target).map(Some).map_err(|e| e.to_string())
    }

    /// The template store, if the server has one.
    pub fn store(&self) -> Option<&TemplateStore> {
        self.store.as_ref()
    }

    /// The stored name `name` stands for: its alias target, or itself.
    pub fn canonical<'a>(&'a self, name: &'a str) -> &'a str {
        self.aliases.get(name).map(String::as_str).unwrap_or(name)
    }

    /// Every name a client may ask for: `builtin` first, then the stored templates.
    pub fn known(&self, builtin: &[&str]) -> Vec<String> {
        let mut names: Vec<String> = builtin.iter().map(|s| s.to_string()).collect();
        names.extend(self.aliases.keys().cloned());
        if let Some(store) = &self.store {
            names.extend(store.names().unwrap_or_default());
        }
        let mut seen = std::collections::BTreeSet::new();
        names.retain(|n| seen.insert(n.clone()));
        names
    }
}

#[cfg(test)]
#[path = "template_catalog_tests.rs"]
mod tests;
