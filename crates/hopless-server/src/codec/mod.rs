//! The RESP codec: bytes in, bytes out, no I/O, so it can be tested and fuzzed alone.
//!
//! | file | what it holds |
//! |---|---|
//! | `request.rs` | [`Decoder`]: client requests (multibulk and inline) with Redis's limits and errors |
//! | `reply.rs` | `Reply`: the reply writer (for the server's own commands), RESP2 or RESP3 per connection |
//! | `frame.rs` | [`Frame`]: any RESP2/RESP3 value, `check` then `parse` (for clients and fuzzing) |

mod frame;
mod reply;
mod request;

pub use frame::{Frame, FrameError};
pub(crate) use reply::{Proto, Reply};
pub(crate) use request::DEFAULT_MAX_BULK_LEN;
pub use request::{split_args, Args, Decoder, ProtocolError, Request};
