//! Putting a template under a resolved policy: the box's root, and the template's environment
//! and working directory as the defaults of its commands.

use crate::error::TemplateError;
use airlock_policy::{FilesystemPolicy, ResolvedPolicy, RootTemplate, DEFAULT_PATH};
use airlock_runtime::backend::Template;

/// Makes `policy` start from `template`. The policy's own environment wins over the template's,
/// except a `PATH` the policy only has by default; the template's working directory is used
/// when the policy has no workspace (which is otherwise where commands start).
pub fn apply_template(
    policy: &mut ResolvedPolicy,
    template: &Template,
) -> Result<(), TemplateError> {
    // `host` changes nothing (a policy that already names a template keeps it).
    let Template::Image(t) = template else {
        return Ok(());
    };
    let FilesystemPolicy::Isolated { workspace, .. } = &policy.filesystem else {
        return Err(TemplateError::Unsupported(format!(
            "template {:?} replaces the box's root, but --profile full-access shows the host's own filesystem: use --profile workspace-write or read-only",
            t.name
        )));
    };
    let has_workspace = workspace.is_some();
    for (k, v) in &t.defaults.env {
        match policy.env.iter_mut().find(|(name, _)| name == k) {
            Some((_, old)) if k == "PATH" && old == DEFAULT_PATH => *old = v.clone(),
            Some(_) => {}
            None => policy.env.push((k.clone(), v.clone())),
        }
    }
    if let (false, Some(cwd)) = (has_workspace, &t.defaults.cwd) {
        policy.cwd = cwd.into();
    }
    policy.template = Some(RootTemplate {
        name: t.name.clone(),
        digest: t.digest.clone(),
        rootfs: t.rootfs.clone(),
        keep_layer: None,
    });
    Ok(())
}
