//! What Redis 7.0.15's command table says of a command ([`Spec`]): its flags, ACL categories, tips,
//! key specs, legacy key range and key-finding procedure for COMMAND INFO, COMMAND GETKEYS and
//! GETKEYSANDFLAGS, and its docs (summary, complexity, history, arguments) for COMMAND DOCS. The
//! values are generated from Redis's `src/commands/*.json` into `cmd/specs/`; these are their types.

/// Key-spec flags (Redis's `CMD_KEY_*`), and their names in the order COMMAND writes them.
pub mod key {
    pub const RO: u16 = 1 << 0;
    pub const RW: u16 = 1 << 1;
    pub const OW: u16 = 1 << 2;
    pub const RM: u16 = 1 << 3;
    pub const ACCESS: u16 = 1 << 4;
    pub const UPDATE: u16 = 1 << 5;
    pub const INSERT: u16 = 1 << 6;
    pub const DELETE: u16 = 1 << 7;
    pub const NOT_KEY: u16 = 1 << 8;
    pub const INCOMPLETE: u16 = 1 << 9;
    pub const VARIABLE_FLAGS: u16 = 1 << 10;

    pub const NAMES: [(u16, &str); 11] = [
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// Where a key spec starts looking (Redis's `begin_search`).
#[derive(Debug, Clone, Copy)]
pub enum BeginSearch {
    Unknown,
    /// At this argument.
    Index(i32),
    /// After this keyword, searched for from `startfrom` (from the end when negative).
    Keyword(&'static str, i32),
}

/// How a key spec finds its keys from where it starts (Redis's `find_keys`).
#[derive(Debug, Clone, Copy)]
pub enum FindKeys {
    Unknown,
    /// `lastkey` (relative to the start; negative: from the end), `step`, `limit` (when `lastkey`
    /// is -1, only the first 1/limit of the rest are keys).
    Range(i32, i32, i32),
    /// `keynumidx` (where the count is, relative to the start), `firstkey` (where the keys start,
    /// relative to the start), `step`.
    Keynum(i32, i32, i32),
}

/// One key spec: which arguments are keys and how the command uses them.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    pub notes: &'static str,
    pub flags: u16,
    pub begin: BeginSearch,
    pub find: FindKeys,
}

impl KeySpec {
    pub const fn new(flags: u16, begin: BeginSearch, find: FindKeys) -> Self {
        KeySpec {
            notes: "",
            flags,
            begin,
            find,
        }
    }

    pub const fn notes(self, notes: &'static str) -> Self {
        KeySpec { notes, ..self }
    }
}

/// Redis's `getkeys_proc`: the function that finds a command's keys when its key specs cannot.
#[derive(Debug, Clone, Copy)]
pub enum GetKeys {
    /// `genericGetKeys`: a count of keys at `count`, keys from `first` every `step`, and a
    /// destination at `store` (0: none), put last.
    Counted {
        store: usize,
        count: usize,
        first: usize,
        step: usize,
    },
    Sort,
    SortRo,
    Georadius,
    Xread,
    Set,
    Bitfield,
    Migrate,
}

/// An argument's type, as COMMAND DOCS names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    String,
    Integer,
    Double,
    Key,
    Pattern,
    UnixTime,
    PureToken,
    OneOf,
    Block,
}

impl ArgType {
    pub fn name(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::Key => "key",
            ArgType::Pattern => "pattern",
            ArgType::UnixTime => "unix-time",
            ArgType::PureToken => "pure-token",
            ArgType::OneOf => "oneof",
            ArgType::Block => "block",
        }
    }
}

/// One argument in COMMAND DOCS. An empty string is a field Redis leaves out.
#[derive(Debug, Clone, Copy)]
pub struct Arg {
    pub name: &'static str,
    pub kind: ArgType,
    /// The key spec it is a key of (-1: none).
    pub key_spec: i32,
    /// None: no token (MIGRATE's empty-string alternative has the token `""`, shown empty).
    pub token: Option<&'static str>,
    pub summary: &'static str,
    pub since: &'static str,
    pub deprecated_since: &'static str,
    /// Space-separated, in COMMAND DOCS's order: `optional`, `multiple`, `multiple_token`.
    pub flags: &'static str,
    /// A `oneof`'s or a `block`'s arguments.
    pub args: &'static [Arg],
}

impl Arg {
    pub const fn new(name: &'static str, kind: ArgType) -> Self {
        Arg {
            name,
            kind,
            key_spec: -1,
            token: None,
            summary: "",
            since: "",
            deprecated_since: "",
            flags: "",
            args: &[],
        }
    }

    pub const fn key_spec(self, key_spec: i32) -> Self {
        Arg { key_spec, ..self }
    }

    pub const fn token(self, token: &'static str) -> Self {
        Arg {
            token: Some(token),
            ..self
        }
    }

    /// (No argument of a command hopless serves has a summary in Redis 7.0.15; the generator writes
    /// this for one that does.)
    #[allow(dead_code)]
    pub const fn summary(self, summary: &'static str) -> Self {
        Arg { summary, ..self }
    }

    pub const fn since(self, since: &'static str) -> Self {
        Arg { since, ..self }
    }

    pub const fn deprecated_since(self, deprecated_since: &'static str) -> Self {
        Arg {
            deprecated_since,
            ..self
        }
    }

    pub const fn flags(self, flags: &'static str) -> Self {
        Arg { flags, ..self }
    }

    pub const fn args(self, args: &'static [Arg]) -> Self {
        Arg { args, ..self }
    }
}

/// A command (or a container's subcommand) as Redis 7.0.15 describes it. An empty string is a field
/// Redis leaves out of COMMAND DOCS.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// The full name: `get`, or `config|get` for a subcommand.
    pub name: &'static str,
    pub arity: i32,
    /// Space-separated, in COMMAND's order (`movablekeys` included where Redis derives it).
    pub flags: &'static str,
    /// ACL categories, space-separated, in COMMAND's order (the implicit ones included).
    pub acl: &'static str,
    pub tips: &'static [&'static str],
    pub key_specs: &'static [KeySpec],
    /// The legacy first key, last key and step that COMMAND INFO derives from the key specs.
    pub range: (i32, i32, i32),
    pub getkeys: Option<GetKeys>,
    pub summary: &'static str,
    pub since: &'static str,
    pub group: &'static str,
    pub complexity: &'static str,
    /// Space-separated: `deprecated`, `syscmd`.
    pub doc_flags: &'static str,
    pub deprecated_since: &'static str,
    pub replaced_by: &'static str,
    /// (version, what changed).
    pub history: &'static [(&'static str, &'static str)],
    pub args: &'static [Arg],
    pub subs: &'static [Spec],
}

impl Spec {
    /// The fields a generated spec leaves at their defaults.
    pub const NONE: Spec = Spec {
        name: "",
        arity: 0,
        flags: "",
        acl: "",
        tips: &[],
        key_specs: &[],
        range: (0, 0, 0),
        getkeys: None,
        summary: "",
        since: "",
        group: "",
        complexity: "",
        doc_flags: "",
        deprecated_since: "",
        replaced_by: "",
        history: &[],
        args: &[],
        subs: &[],
    };

    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.split_ascii_whitespace().any(|f| f == flag)
    }

    /// A subcommand by its name after the `|`, any case.
    pub fn sub(&self, name: &[u8]) -> Option<&'static Spec> {
        self.subs.iter().find(|s| {
            let declared = s.name.rsplit('|').next().unwrap_or(s.name);
            declared.as_bytes().eq_ignore_ascii_case(name)
        })
    }

    /// Whether `argc` arguments (the name included) are what the arity allows.
    pub fn arity_allows(&self, argc: usize) -> bool {
        let argc = argc as i32;
        !((self.arity > 0 && argc != self.arity) || argc < -self.arity)
    }

    /// Redis's `doesCommandHaveKeys`: a key-finding procedure, or a key spec of real keys.
    pub fn has_keys(&self) -> bool {
        self.getkeys.is_some() || self.key_specs.iter().any(|k| k.flags & key::NOT_KEY == 0)
    }
}
