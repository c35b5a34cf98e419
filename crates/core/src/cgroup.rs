//! The cgroup tree of a run: paths as an operator writes them (`/`, `/cgA`,
//! `/a/b`), each with a parent. Group 0 is the root.

use std::collections::BTreeMap;
use std::fmt;

/// Index of a cgroup in a [`CgroupTree`]. `GroupId::ROOT` is `/`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupId(pub u32);

impl GroupId {
    /// The root cgroup `/`, always present and always group 0.
    pub const ROOT: GroupId = GroupId(0);
    /// Index into per-group arrays (`Vec<T>` indexed by group).
    #[inline]
    pub const fn idx(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "g{}", self.0)
    }
}

#[derive(Clone, Debug)]
struct Node {
    path: String,
    parent: Option<GroupId>,
    children: Vec<GroupId>,
    depth: u32,
}

/// A cgroup hierarchy. Creating `/a/b` creates `/a` too, as `mkdir -p` would.
#[derive(Clone, Debug)]
pub struct CgroupTree {
    nodes: Vec<Node>,
    by_path: BTreeMap<String, GroupId>,
}

/// A cgroup path that cannot name a cgroup.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a cgroup path: use absolute paths like /cgA or /a/b (no `.`/`..`, no empty components)")]
pub struct BadCgroupPath(pub String);

impl Default for CgroupTree {
    fn default() -> Self {
        Self::new()
    }
}

impl CgroupTree {
    /// A tree holding only the root `/`.
    pub fn new() -> Self {
        let root = Node {
            path: "/".to_string(),
            parent: None,
            children: Vec::new(),
            depth: 0,
        };
        let mut by_path = BTreeMap::new();
        by_path.insert("/".to_string(), GroupId::ROOT);
        CgroupTree {
            nodes: vec![root],
            by_path,
        }
    }

    /// Normalise a user path: `cgA`, `/cgA`, `/cgA/` all name `/cgA`.
    pub fn normalize(path: &str) -> Result<String, BadCgroupPath> {
        let trimmed = path.trim();
        if trimmed.is_empty() {
            return Err(BadCgroupPath(path.to_string()));
        }
        let mut out = String::new();
        for comp in trimmed.split('/').filter(|c| !c.is_empty()) {
            if comp == "."
                || comp == ".."
                || comp.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(BadCgroupPath(path.to_string()));
            }
            out.push('/');
            out.push_str(comp);
        }
        if out.is_empty() {
            out.push('/');
        }
        Ok(out)
    }

    /// Look a group up by path (normalised).
    pub fn get(&self, path: &str) -> Option<GroupId> {
        let p = Self::normalize(path).ok()?;
        self.by_path.get(&p).copied()
    }

    /// Create (or find) the group at `path` and all its ancestors.
    pub fn ensure(&mut self, path: &str) -> Result<GroupId, BadCgroupPath> {
        let p = Self::normalize(path)?;
        if let Some(&g) = self.by_path.get(&p) {
            return Ok(g);
        }
        let mut cur = GroupId::ROOT;
        let mut prefix = String::new();
        for comp in p.split('/').filter(|c| !c.is_empty()) {
            prefix.push('/');
            prefix.push_str(comp);
            cur = match self.by_path.get(&prefix) {
                Some(&g) => g,
                None => {
                    let id = GroupId(self.nodes.len() as u32);
                    let depth = self.nodes[cur.idx()].depth + 1;
                    self.nodes.push(Node {
                        path: prefix.clone(),
                        parent: Some(cur),
                        children: Vec::new(),
                        depth,
                    });
                    self.nodes[cur.idx()].children.push(id);
                    self.by_path.insert(prefix.clone(), id);
                    id
                }
            };
        }
        Ok(cur)
    }

    /// Number of groups, the root included (so never zero).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
    /// Always `false`: a tree holds at least the root.
    pub fn is_empty(&self) -> bool {
        false
    }
    /// The normalised path of `g` (`/`, `/cgA`, `/a/b`). Panics if `g` is not
    /// in this tree.
    pub fn path(&self, g: GroupId) -> &str {
        &self.nodes[g.idx()].path
    }
    /// The parent of `g`, or `None` for the root. Panics if `g` is not in this
    /// tree.
    pub fn parent(&self, g: GroupId) -> Option<GroupId> {
        self.nodes[g.idx()].parent
    }
    /// The direct children of `g`, in creation order.
    pub fn children(&self, g: GroupId) -> &[GroupId] {
        &self.nodes[g.idx()].children
    }
    /// Depth of `g`: 0 for the root, 1 for `/cgA`, 2 for `/a/b`.
    pub fn depth(&self, g: GroupId) -> u32 {
        self.nodes[g.idx()].depth
    }
    /// All groups in creation order (parents before children).
    pub fn ids(&self) -> impl Iterator<Item = GroupId> {
        (0..self.nodes.len() as u32).map(GroupId)
    }
    /// `g`, its parent, ..., the root.
    pub fn ancestors_inclusive(&self, g: GroupId) -> impl Iterator<Item = GroupId> + '_ {
        std::iter::successors(Some(g), move |&x| self.parent(x))
    }
    /// Is `a` an ancestor of (or equal to) `b`?
    pub fn is_ancestor_or_self(&self, a: GroupId, b: GroupId) -> bool {
        self.ancestors_inclusive(b).any(|x| x == a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_building() {
        let mut t = CgroupTree::new();
        let b = t.ensure("/a/b").unwrap();
        let a = t.get("a").unwrap();
        assert_eq!(t.parent(b), Some(a));
        assert_eq!(t.parent(a), Some(GroupId::ROOT));
        assert_eq!(t.path(b), "/a/b");
        assert_eq!(t.ensure("/a/b/").unwrap(), b);
        assert_eq!(t.depth(b), 2);
        assert!(t.is_ancestor_or_self(a, b));
        assert!(!t.is_ancestor_or_self(b, a));
        assert!(t.ensure("/a/../b").is_err());
        assert!(t.ensure("").is_err());
        assert_eq!(t.ensure("/").unwrap(), GroupId::ROOT);
    }
}
