//! Channel ids. Channel 0 is the control channel; the agent assigns odd ids (process output and
//! stdin, file downloads) and the client assigns even ids (file uploads), so the two sides never
//! collide.

/// The channel of hello, request, reply and event frames.
pub const CONTROL_CHANNEL: u32 = 0;

/// Which side assigns a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelSide {
    /// Odd ids.
    Agent,
    /// Even, non-zero ids.
    Client,
}

/// Whether `id` is one the agent assigns.
pub fn is_agent_channel(id: u32) -> bool {
    id % 2 == 1
}

/// Whether `id` is one the client assigns.
pub fn is_client_channel(id: u32) -> bool {
    id != CONTROL_CHANNEL && id % 2 == 0
}

/// Hands out fresh channel ids for one side, wrapping around (skipping 0) after 2^31 ids.
#[derive(Debug, Clone)]
pub struct ChannelAllocator {
    side: ChannelSide,
    next: u32,
}

impl ChannelAllocator {
    /// An allocator for `side`.
    pub fn new(side: ChannelSide) -> ChannelAllocator {
        let next = match side {
            ChannelSide::Agent => 1,
            ChannelSide::Client => 2,
        };
        ChannelAllocator { side, next }
    }

    /// The next id of this side. The caller skips ids still in use (see `allocate_unused`).
    pub fn allocate(&mut self) -> u32 {
        let id = self.next;
        self.next = self.next.wrapping_add(2);
        if self.next == CONTROL_CHANNEL {
            self.next = 2;
        }
        debug_assert!(match self.side {
            ChannelSide::Agent => is_agent_channel(id),
            ChannelSide::Client => is_client_channel(id),
        });
        id
    }

    /// The next id of this side for which `in_use` is false.
    pub fn allocate_unused(&mut self, in_use: impl Fn(u32) -> bool) -> u32 {
        loop {
            let id = self.allocate();
            if !in_use(id) {
                return id;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_never_collide() {
        let mut a = ChannelAllocator::new(ChannelSide::Agent);
        let mut c = ChannelAllocator::new(ChannelSide::Client);
        for _ in 0..1000 {
            let (x, y) = (a.allocate(), c.allocate());
            assert!(is_agent_channel(x) && !is_client_channel(x));
            assert!(is_client_channel(y) && !is_agent_channel(y));
        }
        assert!(!is_agent_channel(0) && !is_client_channel(0));
    }

    #[test]
    fn wraps_without_zero() {
        let mut c = ChannelAllocator {
            side: ChannelSide::Client,
            next: u32::MAX - 1,
        };
        assert_eq!(c.allocate(), u32::MAX - 1);
        assert_eq!(c.allocate(), 2);
        let mut a = ChannelAllocator {
            side: ChannelSide::Agent,
            next: u32::MAX,
        };
        assert_eq!(a.allocate(), u32::MAX);
        assert_eq!(a.allocate(), 1);
        assert_eq!(a.allocate_unused(|id| id == 3), 5);
    }
}
