//! Snapshots: the dataset in Redis's RDB file format, written (`write`) and read back (`load`) so that
//! files move both ways between hopless and Redis; the settings and state INFO reports (`state`); and
//! saving with the server around it: SAVE, BGSAVE's forked child, the save timer, the load at start
//! (`save`).

pub mod load;
pub mod save;
pub mod state;
pub mod write;
