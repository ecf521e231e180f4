//! The import graph of every crate has no circle.
//!
//! Reads the Rust sources of each crate (`engine/src`, `sim/src`, `src`, `caller/src`, the
//! fuzz harness's `fuzz/src` and the image backend's `tools/image/{runner,file,doorbell}/src`,
//! each when it exists), builds the graph of its modules and fails naming every circle it finds, as
//! `sim: checks -> pofx -> checks`. Std only: a small lexer, no `syn`, no `cargo modules`.
//!
//! The rules:
//! - A node is a module, that is a file: `a/b.rs` is `a::b`; `mod.rs`, `lib.rs` and `main.rs`
//!   name their directory's module (`a/mod.rs` is `a`, `lib.rs` and `main.rs` the crate root,
//!   `crate`). A module written inline (`mod arch { … }`) is part of its file's node; its
//!   `self::` and `super::` paths are resolved from where they stand.
//! - Comments (line, block — nested — and doc comments), string literals (plain, byte, C and raw
//!   strings) and character literals are stripped before anything is read.
//! - A reference is a path that starts with `crate::`, `super::` or `self::` (`$crate::` too),
//!   in a `use` or anywhere in the code, including `use` groups — `use crate::{a, b::{c, d}}` —
//!   with their nested braces, `self` in a group, `*` and `as` renames.
//! - A reference resolves to the longest prefix of its path that is an existing module:
//!   `crate::a::b::Item` is `a::b` when `a/b.rs` exists, else `a`, else the crate root.
//! - A reference from a module to itself or to one of its descendants is not an edge: a parent
//!   uses its private parts. A child naming its parent is one.
//! - Test modules are left out: the files `tests.rs` and `*_tests.rs` (the `#[cfg(test)]`
//!   modules) are no node, references to them are no edge, and an inline
//!   `#[cfg(test)] mod name { … }` block is skipped.
//!
//! A circle is a strongly connected component of two or more modules; it is named by its
//! shortest cycle through its first module (in path order), followed by every member's edges
//! inside the component.
//!
//! Leaves: a module both sides of a layer use must use no other module of its crate, else it
//! could close a circle through either. [`LEAVES`] names them; each is checked to have no edge. Known limit: a re-export is not followed, so `crate::Report` (re-exported
//! by the root from `report`) is an edge to the root, not to `report`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A module's path below the crate root (empty for the root).
type Module = Vec<String>;

/// One crate's module graph.
#[derive(Debug, Default)]
struct Graph {
    /// Every module, test modules included (references resolve against all of them).
    modules: BTreeSet<Module>,
    /// The edges of every node (test modules are no node).
    edges: BTreeMap<Module, BTreeSet<Module>>,
}

impl Graph {
    fn edge_count(&self) -> usize {
        self.edges.values().map(BTreeSet::len).sum()
    }
}

/// The crates whose graphs are checked: (name, source directory relative to the workspace).
const CRATES: [(&str, &str); 8] = [
    ("engine", "engine/src"),
    ("sim", "sim/src"),
    ("driver", "src"),
    ("caller", "caller/src"),
    ("fuzz", "fuzz/src"),
    ("image-runner", "tools/image/runner/src"),
    ("image-file", "tools/image/file/src"),
    ("doorbell", "tools/image/doorbell/src"),
];

/// The modules that must use no other module of their crate: (crate, module).
/// `sim::verdict` holds the rules the checks judge by, which the emulator's digest applies as
/// it streams: the emulator (`pofx`) and the checks (which use `pofx`) both use it.
const LEAVES: [(&str, &str); 1] = [("sim", "verdict")];

fn is_test_module(module: &[String]) -> bool {
    module.last().is_some_and(|name| name == "tests" || name.ends_with("_tests"))
}

fn display(module: &[String]) -> String {
    if module.is_empty() { "crate".to_owned() } else { module.join("::") }
}

/// Every `.rs` file below `root` with its module path.
fn module_files(root: &Path) -> Vec<(Module, PathBuf)> {
    fn walk(directory: &Path, root: &Path, out: &mut Vec<(Module, PathBuf)>) {
        let mut entries: Vec<PathBuf> = fs::read_dir(directory)
            .unwrap_or_else(|error| panic!("reading {}: {error}", directory.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                let relative = path.strip_prefix(root).expect("below the root").with_extension("");
                let mut module: Module = relative
                    .components()
                    .map(|component| component.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if module.last().is_some_and(|name| ["mod", "lib", "main"].contains(&name.as_str()))
                {
                    module.pop();
                }
                out.push((module, path));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

#[path = "module_graph/lexer.rs"]
mod lexer;

use lexer::{Token, tokenize};

/// The index after the brace-balanced block whose `{` is at `open`.
fn skip_block(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (index, token) in tokens.iter().enumerate().skip(open) {
        if token.is_punct("{") {
            depth += 1;
        } else if token.is_punct("}") {
            depth -= 1;
            if depth == 0 {
                return index + 1;
            }
        }
    }
    tokens.len()
}

/// If `#[cfg(test)]` starts at `index` and marks an inline module, the index after its block.
fn skip_test_module(tokens: &[Token], index: usize) -> Option<usize> {
    let attribute = [
        Token::Punct("#"),
        Token::Punct("["),
        Token::Ident("cfg".to_owned()),
        Token::Punct("("),
        Token::Ident("test".to_owned()),
        Token::Punct(")"),
        Token::Punct("]"),
    ];
    if tokens.get(index..index + attribute.len())? != attribute {
        return None;
    }
    let mut i = index + attribute.len();
    loop {
        let token = tokens.get(i)?;
        if token.is_punct("#") && tokens.get(i + 1)?.is_punct("[") {
            // Another attribute.
            let mut depth = 0usize;
            loop {
                let token = tokens.get(i)?;
                i += 1;
                if token.is_punct("[") {
                    depth += 1;
                } else if token.is_punct("]") {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
        } else if token.is_ident("pub") {
            i += 1;
            if tokens.get(i)?.is_punct("(") {
                while !tokens.get(i)?.is_punct(")") {
                    i += 1;
                }
                i += 1;
            }
        } else if token.is_ident("mod") {
            let opens =
                matches!(tokens.get(i + 1)?, Token::Ident(_)) && tokens.get(i + 2)?.is_punct("{");
            return opens.then(|| skip_block(tokens, i + 2));
        } else {
            return None;
        }
    }
}

/// Reads the rest of a path after `prefix` (at `index`: `::` or the end of the path), pushing
/// every path it names to `out`; returns the index after it.
fn path_rest(
    tokens: &[Token],
    mut index: usize,
    mut prefix: Module,
    out: &mut Vec<Module>,
) -> usize {
    while tokens.get(index).is_some_and(|token| token.is_punct("::")) {
        match tokens.get(index + 1) {
            Some(Token::Ident(name)) if name == "super" => {
                prefix.pop();
                index += 2;
            }
            Some(Token::Ident(name)) if name == "self" => index += 2,
            Some(Token::Ident(name)) => {
                prefix.push(name.clone());
                index += 2;
            }
            Some(token) if token.is_punct("{") => {
                return use_group(tokens, index + 2, &prefix, out);
            }
            Some(token) if token.is_punct("*") => {
                index += 2;
                break;
            }
            _ => {
                index += 1;
                break;
            }
        }
    }
    out.push(prefix);
    skip_rename(tokens, index)
}

/// Skips `as name` at `index`.
fn skip_rename(tokens: &[Token], index: usize) -> usize {
    if tokens.get(index).is_some_and(|token| token.is_ident("as")) { index + 2 } else { index }
}

/// Reads a `use` group after its `{` (at `index`), pushing every path; returns the index after
/// its `}`.
fn use_group(tokens: &[Token], mut index: usize, prefix: &Module, out: &mut Vec<Module>) -> usize {
    while let Some(token) = tokens.get(index) {
        match token {
            Token::Punct("}") => return index + 1,
            Token::Punct("{") => index = use_group(tokens, index + 1, prefix, out),
            Token::Punct("*") => {
                out.push(prefix.clone());
                index += 1;
            }
            Token::Ident(name) if name == "self" => {
                index = path_rest(tokens, index + 1, prefix.clone(), out);
            }
            Token::Ident(name) if name == "super" => {
                let mut parent = prefix.clone();
                parent.pop();
                index = path_rest(tokens, index + 1, parent, out);
            }
            Token::Ident(name) => {
                let mut path = prefix.clone();
                path.push(name.clone());
                index = path_rest(tokens, index + 1, path, out);
            }
            _ => index += 1,
        }
    }
    index
}

/// Every path `source` (the file of module `module`) names from `crate`, `super` or `self`.
fn references(source: &str, module: &[String]) -> Vec<Module> {
    let tokens = tokenize(source);
    let mut out = Vec::new();
    // Inline modules open in this file: (name, brace depth inside their block).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut index = 0;
    while let Some(token) = tokens.get(index) {
        if let Some(after) = skip_test_module(&tokens, index) {
            index = after;
            continue;
        }
        let next = tokens.get(index + 1);
        match token {
            Token::Punct("{") => depth += 1,
            Token::Punct("}") => {
                if inline.last().is_some_and(|(_, inside)| *inside == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Token::Ident(keyword) if keyword == "mod" => {
                if let (Some(Token::Ident(name)), Some(open)) = (next, tokens.get(index + 2))
                    && open.is_punct("{")
                {
                    inline.push((name.clone(), depth + 1));
                }
            }
            Token::Ident(root)
                if ["crate", "super", "self"].contains(&root.as_str())
                    && next.is_some_and(|next| next.is_punct("::"))
                    && !index
                        .checked_sub(1)
                        .and_then(|before| tokens.get(before))
                        .is_some_and(|before| before.is_punct("::")) =>
            {
                let mut here: Module = module.to_vec();
                here.extend(inline.iter().map(|(name, _)| name.clone()));
                let base = match root.as_str() {
                    "crate" => Vec::new(),
                    "super" => {
                        here.pop();
                        here
                    }
                    _ => here,
                };
                index = path_rest(&tokens, index + 1, base, &mut out);
                continue;
            }
            _ => {}
        }
        index += 1;
    }
    out
}

/// Builds the module graph of the crate whose sources are under `root`.
fn crate_graph(root: &Path) -> Graph {
    let files = module_files(root);
    let mut graph = Graph {
        modules: files.iter().map(|(module, _)| module.clone()).collect(),
        ..Graph::default()
    };
    for (module, path) in &files {
        if is_test_module(module) {
            continue;
        }
        let source = fs::read_to_string(path)
            .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
        let edges = graph.edges.entry(module.clone()).or_default();
        for reference in references(&source, module) {
            let target = (0..=reference.len())
                .rev()
                .map(|length| &reference[..length])
                .find(|prefix| graph.modules.contains(*prefix))
                .unwrap_or_default()
                .to_vec();
            let descendant = target.starts_with(module);
            if !descendant && !is_test_module(&target) {
                edges.insert(target);
            }
        }
    }
    graph
}

/// The strongly connected components of two or more modules (Tarjan), each sorted.
fn components(graph: &Graph) -> Vec<Vec<Module>> {
    struct Search<'a> {
        graph: &'a Graph,
        next: usize,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        found: Vec<Vec<Module>>,
    }
    impl<'a> Search<'a> {
        fn visit(&mut self, node: &'a Module) {
            self.index.insert(node, self.next);
            self.low.insert(node, self.next);
            self.next += 1;
            self.stack.push(node);
            self.on_stack.insert(node);
            for target in self.graph.edges.get(node).into_iter().flatten() {
                if !self.graph.edges.contains_key(target) {
                    continue;
                }
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[node].min(self.low[target]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(target) {
                    let low = self.low[node].min(self.index[target]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member.clone());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut search = Search {
        graph,
        next: 0,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.edges.keys() {
        if !search.index.contains_key(node) {
            search.visit(node);
        }
    }
    search.found.sort();
    search.found
}

/// The shortest cycle through `component[0]` inside `component`, as `a -> b -> a`.
fn shortest_cycle(graph: &Graph, component: &[Module]) -> String {
    let start = &component[0];
    let inside: BTreeSet<&Module> = component.iter().collect();
    let mut previous: BTreeMap<&Module, &Module> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    let mut last = None;
    while let Some(node) = queue.pop_front() {
        for target in &graph.edges[node] {
            if target == start {
                last = Some(node);
                break;
            }
            if inside.contains(target) && !previous.contains_key(target) {
                previous.insert(target, node);
                queue.push_back(target);
            }
        }
        if last.is_some() {
            break;
        }
    }
    let mut chain = Vec::new();
    let mut node = last.expect("a component's first module lies on a cycle");
    while node != start {
        chain.push(node);
        node = previous[node];
    }
    chain.reverse();
    let path: Vec<&Module> =
        std::iter::once(start).chain(chain).chain(std::iter::once(start)).collect();
    path.iter().map(|module| display(module)).collect::<Vec<_>>().join(" -> ")
}

/// Every circle of `graph`, named for crate `name`: the shortest cycle, then each member's
/// edges inside the circle.
fn circles(name: &str, graph: &Graph) -> Vec<String> {
    components(graph)
        .iter()
        .map(|component| {
            let mut text = format!("{name}: {}", shortest_cycle(graph, component));
            if component.len() > 2 {
                let _ = write!(text, " (a circle of {} modules)", component.len());
            }
            for member in component {
                let targets: Vec<String> = graph.edges[member]
                    .iter()
                    .filter(|target| component.contains(target))
                    .map(|target| display(target))
                    .collect();
                let _ = write!(text, "\n    {} -> {}", display(member), targets.join(", "));
            }
            text
        })
        .collect()
}

/// The crates present in this checkout, with their graphs.
fn workspace_graphs() -> Vec<(&'static str, Graph)> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    CRATES
        .into_iter()
        .map(|(name, directory)| (name, workspace.join(directory)))
        .filter(|(_, directory)| directory.is_dir())
        .map(|(name, directory)| {
            let graph = crate_graph(&directory);
            println!("{name}: {} modules, {} edges", graph.edges.len(), graph.edge_count());
            (name, graph)
        })
        .collect()
}

#[test]
fn no_crate_has_an_import_circle() {
    let found: Vec<String> =
        workspace_graphs().iter().flat_map(|(name, graph)| circles(name, graph)).collect();
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn every_leaf_uses_no_other_module() {
    let graphs = workspace_graphs();
    for (crate_name, leaf) in LEAVES {
        let (_, graph) = graphs
            .iter()
            .find(|(name, _)| *name == crate_name)
            .unwrap_or_else(|| panic!("{crate_name} was not read"));
        let used = leaf_uses(graph, leaf).unwrap_or_else(|| panic!("{crate_name}: no {leaf}"));
        assert!(used.is_empty(), "{crate_name}: the leaf {leaf} uses {}", used.join(", "));
    }
}

/// The modules `leaf` uses (`None`: no such module).
fn leaf_uses(graph: &Graph, leaf: &str) -> Option<Vec<String>> {
    let edges = graph.edges.get(&module(leaf))?;
    Some(edges.iter().map(|target| display(target)).collect())
}

#[test]
fn every_crate_is_read_and_has_edges() {
    let graphs = workspace_graphs();
    for name in ["engine", "sim", "driver", "image-runner"] {
        let (_, graph) = graphs
            .iter()
            .find(|(crate_name, _)| *crate_name == name)
            .unwrap_or_else(|| panic!("{name} was not read"));
        assert!(graph.edges.len() > 5, "{name}: only {} modules", graph.edges.len());
        assert!(graph.edge_count() > 5, "{name}: only {} edges", graph.edge_count());
    }
}

/// A source tree in a fresh temporary directory, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(files: &[(&str, &str)]) -> Self {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "module_graph_{}_{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        for (path, source) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
            fs::write(&path, source).expect("a file");
        }
        Self(root)
    }

    fn graph(&self) -> Graph {
        crate_graph(&self.0)
    }

    fn circles(&self) -> Vec<String> {
        circles("t", &self.graph())
            .into_iter()
            .map(|circle| circle.lines().next().unwrap_or_default().to_owned())
            .collect()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn module(path: &str) -> Module {
    if path == "crate" { Vec::new() } else { path.split("::").map(str::to_owned).collect() }
}

fn edges_of(graph: &Graph, from: &str) -> Vec<String> {
    graph.edges[&module(from)].iter().map(|target| display(target)).collect()
}

#[test]
fn a_two_module_circle_is_caught_and_named() {
    let tree = Tree::new(&[
        ("lib.rs", "mod checks;\nmod pofx;\n"),
        ("checks.rs", "use crate::pofx::Observations;\npub struct Check;\n"),
        ("pofx.rs", "pub struct Observations(super::checks::Check);\n"),
    ]);
    assert_eq!(tree.circles(), ["t: checks -> pofx -> checks"]);
    let text = circles("t", &tree.graph()).join("\n");
    assert!(text.contains("\n    checks -> pofx\n    pofx -> checks"), "{text}");
}

#[test]
fn a_three_module_circle_is_caught_and_named() {
    let tree = Tree::new(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "fn f() { crate::b::g(); }\n"),
        ("b.rs", "use super::{c::H};\npub fn g() {}\n"),
        ("c/mod.rs", "pub struct H;\nuse crate::{a};\n"),
    ]);
    assert_eq!(tree.circles(), ["t: a -> b -> c -> a (a circle of 3 modules)"]);
}

#[test]
fn a_parent_using_its_child_and_the_child_its_parent_is_no_circle() {
    let tree = Tree::new(&[
        ("lib.rs", "mod scenario;\n"),
        ("scenario.rs", "mod kernel;\nuse self::kernel::KernelSpec;\npub struct Reader;\n"),
        ("scenario/kernel.rs", "use super::Reader;\npub struct KernelSpec;\n"),
    ]);
    let graph = tree.graph();
    assert!(edges_of(&graph, "scenario").is_empty());
    assert_eq!(edges_of(&graph, "scenario::kernel"), ["scenario"]);
    assert!(tree.circles().is_empty());
}

#[test]
fn an_acyclic_tree_passes_with_every_edge() {
    let tree = Tree::new(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub use a::A;\n"),
        ("a.rs", "use crate::b::B;\nuse crate::c::C;\npub struct A(B, C);\n"),
        ("b.rs", "pub struct B(crate::c::C);\n"),
        ("c.rs", "pub struct C;\n"),
    ]);
    let graph = tree.graph();
    assert_eq!(graph.edge_count(), 3);
    assert_eq!(edges_of(&graph, "a"), ["b", "c"]);
    assert_eq!(edges_of(&graph, "b"), ["c"]);
    assert!(edges_of(&graph, "crate").is_empty(), "the root's `pub use a::A` names its child");
    assert!(tree.circles().is_empty());
}

#[test]
fn paths_in_strings_and_comments_are_no_edges() {
    let tree = Tree::new(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            concat!(
                "//! Uses `crate::b::X`.\n",
                "/// See crate::b.\n",
                "// crate::b::X\n",
                "/* crate::b /* nested crate::b */ crate::b::X */\n",
                "const S: &str = \"crate::b::X \\\" crate::b\";\n",
                "const R: &str = r#\"crate::b \" crate::b\"#;\n",
                "const Q: char = '\"';\n",
                "const T: &[u8] = b\"crate::b\";\n",
                "fn f<'a>(x: &'a str) -> &'a str { x }\n",
            ),
        ),
        ("b.rs", "use crate::a::f;\n"),
    ]);
    let graph = tree.graph();
    assert!(edges_of(&graph, "a").is_empty(), "{:?}", edges_of(&graph, "a"));
    assert_eq!(edges_of(&graph, "b"), ["a"]);
    assert!(tree.circles().is_empty());
}

#[test]
fn nested_use_groups_resolve_to_the_longest_module_prefix() {
    let tree = Tree::new(&[
        ("lib.rs", "mod a;\nmod b;\nmod e;\nmod f;\npub struct Root;\n"),
        ("a.rs", "use crate::{b::{c::{self, D}, Item as Other}, e::{*}, f as g, Root};\n"),
        ("b.rs", "pub mod c;\npub struct Item;\n"),
        ("b/c.rs", "pub struct D;\n"),
        ("e.rs", "use super::super_sibling;\n"),
        ("f.rs", "use self::inner::X;\nmod inner { use super::super::a::Y; pub struct X; }\n"),
    ]);
    let graph = tree.graph();
    assert_eq!(edges_of(&graph, "a"), ["crate", "b", "b::c", "e", "f"]);
    // `super::super_sibling` names an item of the root.
    assert_eq!(edges_of(&graph, "e"), ["crate"]);
    // Inside `mod inner`, `super::super::a` is the root's `a`.
    assert_eq!(edges_of(&graph, "f"), ["a"]);
    assert_eq!(tree.circles(), ["t: a -> f -> a"]);
}

#[test]
fn test_modules_are_left_out() {
    let tree = Tree::new(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "use crate::b::B;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\n#[allow(unused)]\nmod inline_tests { use crate::b::Helper; }\npub struct A;\n",
        ),
        ("a/tests.rs", "use crate::b::Helper;\n"),
        ("b.rs", "pub struct B;\n#[cfg(test)]\nmod tests { use crate::a::A; }\n"),
        ("b/more_tests.rs", "use crate::a::A;\n"),
        ("b/tests.rs", "use crate::a::A;\n"),
    ]);
    let graph = tree.graph();
    assert!(!graph.edges.contains_key(&module("a::tests")));
    assert!(!graph.edges.contains_key(&module("b::more_tests")));
    assert_eq!(edges_of(&graph, "a"), ["b"]);
    assert!(edges_of(&graph, "b").is_empty());
    assert!(tree.circles().is_empty());
}

#[test]
fn a_leaf_using_another_module_is_caught() {
    let tree = Tree::new(&[
        ("lib.rs", "mod checks;\nmod pofx;\nmod verdict;\n"),
        ("checks.rs", "use crate::{pofx::Digest, verdict::Findings};\n"),
        ("pofx.rs", "pub struct Digest(crate::verdict::Findings);\n"),
        (
            "verdict.rs",
            "pub struct Findings;\n#[cfg(test)]\nmod tests { use crate::pofx::Digest; }\n",
        ),
    ]);
    let graph = tree.graph();
    assert_eq!(leaf_uses(&graph, "verdict"), Some(Vec::new()), "a test module is no edge");
    assert!(leaf_uses(&graph, "missing").is_none());
    let tree = Tree::new(&[
        ("lib.rs", "mod pofx;\nmod verdict;\n"),
        ("pofx.rs", "pub struct Digest;\n"),
        ("verdict.rs", "pub fn f(_: &crate::pofx::Digest) {}\n"),
    ]);
    assert_eq!(leaf_uses(&tree.graph(), "verdict"), Some(vec!["pofx".to_owned()]));
}
