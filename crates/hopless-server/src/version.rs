//! The server's constants: the Redis version its replies follow, and its own.

/// The Redis version the replies follow (INFO's `redis_version`, HELLO's `version`): clients gate
/// features on it.
pub const REDIS_VERSION: &str = "7.0.0";
/// This server's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
