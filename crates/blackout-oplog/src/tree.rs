//! The initial tree: what the directory under test held before the workload
//! ran (after `--init` and `--setup`), treated as durable.

use crate::ops::{Ino, Name, ROOT_INO};

/// One inode of the initial tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A regular file and its bytes.
    File(Vec<u8>),
    /// A directory.
    Dir,
    /// A symbolic link and its target.
    Symlink(Vec<u8>),
}

/// A directory entry of the initial tree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// The directory.
    pub dir: Ino,
    /// The name in it.
    pub name: Name,
    /// The inode.
    pub ino: Ino,
}

/// A tree of inodes: `nodes[0]` is the directory under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Inodes, indexed by [`Ino`].
    pub nodes: Vec<Node>,
    /// Directory entries, parents before children.
    pub entries: Vec<Entry>,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: vec![Node::Dir],
            entries: Vec::new(),
        }
    }
}

impl Tree {
    /// The path of an entry's inode from the root, for display.
    pub fn path_of(&self, ino: Ino) -> Option<Vec<u8>> {
        if ino == ROOT_INO {
            return Some(Vec::new());
        }
        let e = self.entries.iter().find(|e| e.ino == ino)?;
        let mut p = self.path_of(e.dir)?;
        if !p.is_empty() {
            p.push(b'/');
        }
        p.extend_from_slice(&e.name.0);
        Some(p)
    }
}
