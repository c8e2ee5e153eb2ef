//! A running box of any kind, with its agent connection shared by many users: what the server,
//! the E2B gateway and MCP hold. Backend-neutral: it only knows the [`BoxInstance`] seam and the
//! agent protocol.

use crate::agent_client::{AgentClient, AgentError};
use crate::backend::{
    Backend, BackendError, BoxEnd, BoxInstance, Capabilities, Checkpoint, CheckpointOptions,
    CommandDefaults, StartOptions, Template, Usage,
};
use crate::channel::AgentChannel;
use crate::error::SandboxError;
use crate::mux::AgentMux;
use crate::Receipt;
use airlock_policy::{Egress, ResolvedPolicy};

/// A running box and its agent connection. Dropping it (or [`LiveSandbox::kill`]) ends the box.
pub struct LiveSandbox {
    // Field order: the channels and the connection close before the box is ended.
    channel: AgentChannel,
    /// The agent connection, shared by [`LiveSandbox::channel`] and every
    /// [`LiveSandbox::new_channel`].
    mux: AgentMux,
    defaults: CommandDefaults,
    instance: Option<Box<dyn BoxInstance>>,
}

impl LiveSandbox {
    /// Starts a box with `backend` and connects to its agent. Blocking; any thread.
    pub fn start(
        backend: &dyn Backend,
        policy: &ResolvedPolicy,
        template: &Template,
        opts: &StartOptions,
    ) -> Result<LiveSandbox, SandboxError> {
        let instance = backend.start(policy, template, opts)?;
        LiveSandbox::connect(instance)
    }

    /// Shares the agent connection of a started box.
    pub fn connect(mut instance: Box<dyn BoxInstance>) -> Result<LiveSandbox, SandboxError> {
        let stream = instance
            .take_agent_stream()
            .ok_or(SandboxError::Agent(AgentError::Closed))?;
        let mux = AgentMux::new(stream)?;
        let defaults = instance.command_defaults();
        let channel = AgentChannel::new(
            AgentClient::over(mux.port()),
            defaults.env.clone(),
            defaults.cwd.clone(),
        );
        Ok(LiveSandbox {
            channel,
            mux,
            defaults,
            instance: Some(instance),
        })
    }

    fn instance(&self) -> Result<&dyn BoxInstance, BackendError> {
        self.instance
            .as_deref()
            .ok_or_else(|| BackendError::Ended("killed".into()))
    }

    fn instance_mut(&mut self) -> Result<&mut Box<dyn BoxInstance>, BackendError> {
        self.instance
            .as_mut()
            .ok_or_else(|| BackendError::Ended("killed".into()))
    }

    /// What the box enforces.
    pub fn receipt(&self) -> Option<&Receipt> {
        self.instance.as_deref().map(|i| i.receipt())
    }

    /// The box's main channel to its agent (the one its code interpreter contexts live on).
    pub fn channel(&mut self) -> &mut AgentChannel {
        &mut self.channel
    }

    /// A new independent user of the box's agent connection, usable after this handle is
    /// given back (e.g. for [`crate::tunnel::open`]: a TCP connection to a port on the box's
    /// own loopback, made by the agent from inside the box).
    pub fn agent_port(&self) -> crate::MuxPort {
        self.mux.port()
    }

    /// A new channel to the box's agent, independent of every other: usable from another thread
    /// while the main channel (or other channels) are busy. What it starts and reads is its own; a
    /// process it started runs on after it is dropped (its output is detached).
    pub fn new_channel(&self) -> AgentChannel {
        AgentChannel::new(
            AgentClient::over(self.mux.port()),
            self.defaults.env.clone(),
            self.defaults.cwd.clone(),
        )
    }

    /// What commands start with unless told otherwise.
    pub fn command_defaults(&self) -> &CommandDefaults {
        &self.defaults
    }

    /// Replaces what commands start with, for the main channel and every later
    /// [`LiveSandbox::new_channel`] (a pooled box given to its sandbox). Channels made before
    /// keep what they had; the main channel is made anew, so call it before the box is used.
    pub fn set_command_defaults(&mut self, defaults: CommandDefaults) {
        self.channel = AgentChannel::new(
            AgentClient::over(self.mux.port()),
            defaults.env.clone(),
            defaults.cwd.clone(),
        );
        self.defaults = defaults;
    }

    /// How the box ended, or `None` while it runs.
    pub fn ended(&self) -> Option<BoxEnd> {
        match self.instance() {
            Ok(i) => i.ended(),
            Err(_) => Some(BoxEnd {
                reason: "killed".into(),
            }),
        }
    }

    /// Waits up to `timeout` for the box to end.
    pub fn wait_ended(&self, timeout: std::time::Duration) -> Option<BoxEnd> {
        match self.instance() {
            Ok(i) => i.wait_ended(timeout),
            Err(_) => self.ended(),
        }
    }

    /// Stops the box in place (where its backend can; see [`Capabilities`]).
    pub fn pause(&mut self) -> Result<(), BackendError> {
        self.instance_mut()?.pause()
    }

    /// Continues a paused box.
    pub fn resume(&mut self) -> Result<(), BackendError> {
        self.instance_mut()?.resume()
    }

    /// Stops a box that waits in a pool (see [`BoxInstance::park`]).
    pub fn park(&mut self) -> Result<(), BackendError> {
        self.instance_mut()?.park()
    }

    /// Continues a parked box.
    pub fn unpark(&mut self) -> Result<(), BackendError> {
        self.instance_mut()?.unpark()
    }

    /// Writes the box's state into `dir` (where its backend can; see [`Capabilities`] and
    /// [`BoxInstance::checkpoint`]).
    pub fn checkpoint(
        &mut self,
        dir: &std::path::Path,
        opts: &CheckpointOptions,
    ) -> Result<Checkpoint, BackendError> {
        self.instance_mut()?.checkpoint(dir, opts)
    }

    /// What the box uses now.
    pub fn usage(&mut self) -> Result<Usage, BackendError> {
        self.instance_mut()?.usage()
    }

    /// The box's optional abilities.
    pub fn capabilities(&self) -> Capabilities {
        self.instance()
            .map(|i| i.capabilities())
            .unwrap_or_default()
    }

    /// Replaces the box's egress allowlist for the connections that follow.
    pub fn set_egress(&mut self, egress: &Egress) -> Result<(), BackendError> {
        self.instance_mut()?.set_egress(egress)
    }

    /// Answers the box's held connection `id` in `by`'s name (see
    /// [`BoxInstance::answer_approval`]).
    pub fn answer_approval(
        &mut self,
        id: u64,
        answer: &airlock_policy::ApprovalAnswer,
        by: &str,
    ) -> Result<(), BackendError> {
        self.instance_mut()?.answer_approval(id, answer, by)
    }

    /// A handle that answers the box's held connections from any thread (see
    /// [`BoxInstance::approval_answerer`]).
    pub fn approval_answerer(
        &self,
    ) -> Option<std::sync::Arc<dyn crate::backend::ApprovalAnswerer>> {
        self.instance.as_ref()?.approval_answerer()
    }

    /// Returns once every network event recorded so far has reached the start's sink.
    pub fn flush_network_events(&mut self) -> Result<(), BackendError> {
        self.instance_mut()?.flush_network_events()
    }

    /// Ends the box and waits (bounded) for its host side to clean up.
    pub fn kill(mut self) {
        if let Some(i) = self.instance.take() {
            i.kill();
        }
    }
}
