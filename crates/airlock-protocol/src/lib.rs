//! The host ↔ agent protocol of airlock.
//!
//! A connection carries *frames* (see [`frame`]): control frames (hello, request, reply, event)
//! on channel 0 carry JSON, data frames carry raw bytes on numbered channels. Both sides decode
//! with the same bounded [`FrameDecoder`], so a hostile peer — code inside the box talking to the
//! host, or anything talking to the agent — can only produce typed errors, never a panic or an
//! unbounded allocation.
//!
//! Pure: no syscalls, only `std::io` read/write helpers.

pub mod channel;
pub mod decoder;
pub mod frame;
pub mod hello;
pub mod message;
pub mod reply;

pub use channel::{
    is_agent_channel, is_client_channel, ChannelAllocator, ChannelSide, CONTROL_CHANNEL,
};
pub use decoder::FrameDecoder;
pub use frame::{
    read_frame, write_frame, Frame, FrameKind, ProtocolError, HEADER_LEN, MAX_BODY, MAX_FRAME_LEN,
};
pub use hello::{Hello, HelloError, Role, PROTOCOL_VERSION};
pub use message::{
    check_xattrs, ExecRequest, ExecUser, FsEventKind, MessageError, Op, Request, TtySize,
    MAX_LIST_DEPTH, MAX_LIST_ENTRIES, MAX_XATTRS, MAX_XATTR_NAME, MAX_XATTR_VALUE, XATTR_NAMESPACE,
};
pub use reply::{
    Empty, Entry, EntryKind, ErrorBody, ErrorCode, Event, ExecReply, ListDirReply, ProcessInfo,
    ProcessList, ReadFileReply, Reply, TunnelReply, WatchReply, WriteFileReply,
};
