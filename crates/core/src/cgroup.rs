//! The cgroup tree of a run: paths as an operator writes them (`/`, `/cgA`,
//! `/a/b`), each with a parent. Group 0 is the root.
//!
//! Groups are created (`mkdir`) and removed (`rmdir`) while a run goes on.
//! Ids are handed out in creation order and never reused: a removed group
//! keeps its id (its IOs still in flight complete under it), and a path
//! created again after its removal is a new group with a new id, as the
//! kernel makes a new cgroup.

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
    /// Not removed (`rmdir`) yet.
    online: bool,
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

/// Why a group cannot be removed (what `rmdir` on cgroupfs says).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoveGroupError {
    /// The root cgroup is never removed.
    #[error("the root cgroup `/` cannot be removed")]
    Root,
    /// No such group, or it was removed already (`ENOENT`).
    #[error("no cgroup {0} to remove (not in the tree, or removed already)")]
    NotFound(GroupId),
    /// The group has child groups (`EBUSY`: remove them first).
    #[error("cgroup `{path}` has {children} child cgroups: remove them first (rmdir: EBUSY)")]
    HasChildren {
        /// The group's path.
        path: String,
        /// How many online children it has.
        children: usize,
    },
    /// A task of the group is blocked in a controller (`EBUSY`: a cgroup
    /// with tasks in it cannot be removed).
    #[error("cgroup `{path}` has {tasks} submitters waiting in {controller}: let them finish first (rmdir: EBUSY)")]
    Busy {
        /// The group's path.
        path: String,
        /// Submitters blocked.
        tasks: u32,
        /// The controller that blocks them.
        controller: &'static str,
    },
}

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
            online: true,
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
                        online: true,
                    });
                    self.nodes[cur.idx()].children.push(id);
                    self.by_path.insert(prefix.clone(), id);
                    id
                }
            };
        }
        Ok(cur)
    }

    /// Remove `g` (`rmdir`): it must not be the root, must be online and
    /// must have no online children. Its id stays valid for lookups of
    /// path, parent and depth; its path is free to be created again as a
    /// new group.
    pub fn remove(&mut self, g: GroupId) -> Result<(), RemoveGroupError> {
        if g == GroupId::ROOT {
            return Err(RemoveGroupError::Root);
        }
        let Some(node) = self.nodes.get(g.idx()).filter(|n| n.online) else {
            return Err(RemoveGroupError::NotFound(g));
        };
        if !node.children.is_empty() {
            return Err(RemoveGroupError::HasChildren {
                path: node.path.clone(),
                children: node.children.len(),
            });
        }
        let (path, parent) = (node.path.clone(), node.parent);
        self.nodes[g.idx()].online = false;
        self.by_path.remove(&path);
        if let Some(p) = parent {
            self.nodes[p.idx()].children.retain(|&c| c != g);
        }
        Ok(())
    }

    /// Is `g` a group of this tree that has not been removed?
    pub fn is_online(&self, g: GroupId) -> bool {
        self.nodes.get(g.idx()).is_some_and(|n| n.online)
    }

    /// Number of groups ever created, the root included (so never zero);
    /// removed groups count: ids index per-group arrays.
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
    /// The direct online children of `g`, in creation order.
    pub fn children(&self, g: GroupId) -> &[GroupId] {
        &self.nodes[g.idx()].children
    }
    /// Depth of `g`: 0 for the root, 1 for `/cgA`, 2 for `/a/b`.
    pub fn depth(&self, g: GroupId) -> u32 {
        self.nodes[g.idx()].depth
    }
    /// All groups ever created, removed ones included, in creation order
    /// (parents before children).
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

    #[test]
    fn remove_is_rmdir() {
        let mut t = CgroupTree::new();
        let b = t.ensure("/a/b").unwrap();
        let a = t.get("/a").unwrap();
        assert_eq!(t.remove(GroupId::ROOT), Err(RemoveGroupError::Root));
        assert!(matches!(
            t.remove(a),
            Err(RemoveGroupError::HasChildren { children: 1, .. })
        ));
        t.remove(b).unwrap();
        assert!(!t.is_online(b) && t.is_online(a));
        assert_eq!(t.remove(b), Err(RemoveGroupError::NotFound(b)));
        assert_eq!(t.get("/a/b"), None);
        assert!(t.children(a).is_empty());
        // the old id still names its path; a new mkdir is a new group
        assert_eq!(t.path(b), "/a/b");
        let b2 = t.ensure("/a/b").unwrap();
        assert_ne!(b2, b);
        assert_eq!(t.len(), 4);
        t.remove(b2).unwrap();
        t.remove(a).unwrap();
        assert_eq!(
            t.remove(GroupId(9)),
            Err(RemoveGroupError::NotFound(GroupId(9)))
        );
    }
}
