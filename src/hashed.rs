//! Hash maps and sets for the path keys of lowering, emitting and lint.
//! A large policy hashes path strings and their prefixes millions of
//! times, and std's SipHash was a fifth of `compile --target all`.
//! foldhash is several times faster on short keys and still seeded per
//! process, so paths in a policy cannot be chosen to collide.

pub type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub type Set<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
