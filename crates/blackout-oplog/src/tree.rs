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
    /// The path of an entry's inode from the root, for display: its first
    /// entry's name under its directory's path, walked up iteratively (at
    /// most one step per inode, so a tree whose entries form a loop ends).
    pub fn path_of(&self, ino: Ino) -> Option<Vec<u8>> {
        let mut names: Vec<&[u8]> = Vec::new();
        let mut at = ino;
        while at != ROOT_INO {
            if names.len() > self.nodes.len() {
                return None;
            }
            let e = self.entries.iter().find(|e| e.ino == at)?;
            names.push(&e.name.0);
            at = e.dir;
        }
        names.reverse();
        Some(names.join(&b'/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_found_and_a_looping_tree_ends() {
        let mut tree = Tree::default();
        tree.nodes.extend([Node::Dir, Node::File(Vec::new())]);
        tree.entries.push(Entry {
            dir: 0,
            name: "d".into(),
            ino: 1,
        });
        tree.entries.push(Entry {
            dir: 1,
            name: "f".into(),
            ino: 2,
        });
        assert_eq!(tree.path_of(2).unwrap(), b"d/f");
        // A hostile tree: d's entry says it lives in f.
        tree.entries[0].dir = 2;
        assert_eq!(tree.path_of(2), None);
    }
}
