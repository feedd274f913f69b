//! The module graphs point one way (README, "Architecture"): a module never
//! imports from a layer above it, the server's HTTP edges never import each
//! other, and no two files import each other, directly or round a longer
//! loop — in the server and in the widget. Read from the source, so a
//! change that tangles them fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The server's layers, top first. A module may import from its own layer
/// (where allowed) and from any layer below.
const SERVER_LAYERS: &[(&str, &[&str])] = &[
    ("wiring", &["app"]),
    ("edges", &["api", "caddie", "bistro", "console", "demo", "embed", "ops", "sandbox"]),
    ("engine", &["engine"]),
    (
        "services",
        &[
            "host",
            "lanes",
            "mcp",
            "sources",
            "knowledge",
            "suites",
            "app_frames",
            "attachments",
            "llm",
            "limits",
            "display",
            "markdown",
            "component",
            "schema",
            "client_addr",
            "workspaces",
            "widget_page",
            "auth",
            "http",
            "serve",
            "precompress",
            "retention",
            "checker",
            "usage",
        ],
    ),
    ("base", &["db", "config", "crypto", "secret", "clock", "ids", "telemetry", "metrics"]),
];

/// Server layers whose modules must not import one another (each edge
/// stands alone).
const SERVER_ISOLATED: &[&str] = &["edges"];

/// The widget's layers: the components ask through the intents, which
/// hand work to the browser-only client, which reads and writes the state.
const WIDGET_LAYERS: &[(&str, &[&str])] = &[
    ("screen", &["components"]),
    ("intents", &["intents"]),
    ("client", &["client"]),
    ("base", &["state", "js", "html", "form", "wire", "mount"]),
];

#[test]
fn no_server_module_imports_from_a_layer_above_it_and_edges_stand_alone() {
    check_layers(&source("server"), SERVER_LAYERS, SERVER_ISOLATED);
}

#[test]
fn no_two_server_files_import_each_other() {
    check_cycles(&source("server"));
}

#[test]
fn no_widget_module_imports_from_a_layer_above_it() {
    check_layers(&source("widget"), WIDGET_LAYERS, &[]);
}

#[test]
fn no_two_widget_files_import_each_other() {
    check_cycles(&source("widget"));
}

fn check_layers(src: &Path, layers: &[(&str, &[&str])], isolated: &[&str]) {
    let graph = ModuleGraph::read(src);
    let layer_of = |module: &str| -> usize {
        let top = module.split("::").nth(1).unwrap_or("");
        layers
            .iter()
            .position(|(_, modules)| modules.contains(&top))
            .unwrap_or_else(|| panic!("`{top}` is in no layer: add it to the layers"))
    };
    let mut wrong = Vec::new();
    for (from, tos) in &graph.imports {
        if from == "crate" {
            continue;
        }
        let from_layer = layer_of(from);
        for to in tos.iter().filter(|to| *to != "crate") {
            let to_layer = layer_of(to);
            let (from_top, to_top) = (top(from), top(to));
            if to_layer < from_layer {
                wrong.push(format!("{from} imports {to}, a layer above it"));
            } else if to_layer == from_layer && from_top != to_top && isolated.contains(&layers[from_layer].0) {
                wrong.push(format!("{from} imports {to}: the edges do not import each other"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn check_cycles(src: &Path) {
    let cycles = ModuleGraph::read(src).cycles();
    assert!(cycles.is_empty(), "files that import each other:\n{}", cycles.join("\n"));
}

/// The checks see the imports a careless change would add.
#[test]
fn the_reader_finds_use_trees_qualified_paths_and_child_modules() {
    let text = "use super::{a, b::{C, d}};\nuse crate::db::Pool;\nfn f() { crate::ids::now_ms(); kid::go(); }\n\
                // crate::ignored::in_comment\nmod kid;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n";
    let paths = import_paths(text, &["kid".to_owned()]);
    for expected in ["super::a", "super::b::C", "super::b::d", "crate::db::Pool", "crate::ids::now_ms", "self::kid::go"]
    {
        assert!(paths.iter().any(|p| p == expected), "{expected} in {paths:?}");
    }
    assert!(!paths.iter().any(|p| p.contains("ignored")), "{paths:?}");
    assert!(!paths.iter().any(|p| p == "super::*"), "a unit-test module's super is the file: {paths:?}");
}

/// A crate's `src/`.
fn source(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(krate).join("src")
}

fn top(module: &str) -> &str {
    module.split("::").nth(1).unwrap_or("")
}

/// Which module (by its path, `crate::engine::turn`) imports which.
struct ModuleGraph {
    imports: BTreeMap<String, BTreeSet<String>>,
}

impl ModuleGraph {
    fn read(src: &Path) -> Self {
        let mut files = Vec::new();
        collect(src, &mut files);
        let modules: BTreeMap<String, PathBuf> =
            files.iter().filter(|f| !f.ends_with("main.rs")).map(|f| (module_of(src, f), f.clone())).collect();
        let mut imports = BTreeMap::new();
        for (module, file) in &modules {
            let text = std::fs::read_to_string(file).unwrap();
            let children = declared_modules(&text);
            let mut targets = BTreeSet::new();
            for path in import_paths(&text, &children) {
                if let Some(target) = resolve(module, &path, &modules)
                    && target != *module
                    && !is_ancestor_of_test(module, &target)
                {
                    targets.insert(target);
                }
            }
            imports.insert(module.clone(), targets);
        }
        Self { imports }
    }

    /// Every loop of imports between files, each written as `a → b → a`.
    fn cycles(&self) -> Vec<String> {
        let mut found = BTreeSet::new();
        for start in self.imports.keys() {
            let mut stack = vec![(start.clone(), vec![start.clone()])];
            let mut seen = BTreeSet::new();
            while let Some((at, path)) = stack.pop() {
                for next in self.imports.get(&at).into_iter().flatten() {
                    if next == start {
                        let mut loop_ = path.clone();
                        let smallest = loop_.iter().min().unwrap().clone();
                        let turn = loop_.iter().position(|m| *m == smallest).unwrap();
                        loop_.rotate_left(turn);
                        loop_.push(smallest);
                        found.insert(loop_.join(" → "));
                    } else if seen.insert(next.clone()) {
                        let mut longer = path.clone();
                        longer.push(next.clone());
                        stack.push((next.clone(), longer));
                    }
                }
            }
        }
        found.into_iter().collect()
    }
}

/// A unit-test module (`mod tests;` in its own file) may use its parent.
fn is_ancestor_of_test(module: &str, target: &str) -> bool {
    module.ends_with("::tests") && module.starts_with(target)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    std::iter::once("crate".to_owned()).chain(parts).collect::<Vec<_>>().join("::")
}

/// `mod name;` declarations of a file.
fn declared_modules(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("pub ").unwrap_or(l).strip_prefix("pub(crate) ").or(Some(l)))
        .filter_map(|l| l.trim_start_matches("pub ").strip_prefix("mod "))
        .filter_map(|l| l.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

/// Every path a file names through `crate::`, `super::` or a child module
/// of its own (as `self::child::…`), with `use` trees expanded. Comments
/// are skipped.
fn import_paths(text: &str, children: &[String]) -> Vec<String> {
    // An inline `mod tests { use super::*; }` is a child of this file: its
    // `super` is the file itself, never its parent.
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => text,
    };
    let code: String = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let boundary = code.is_char_boundary(i)
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':'));
        if boundary {
            let rest = &code[i..];
            let root =
                ["crate::", "super::"].iter().find(|r| rest.starts_with(**r)).map(|r| r.to_string()).or_else(|| {
                    children.iter().find(|c| rest.starts_with(&format!("{c}::"))).map(|c| format!("self::{c}::"))
                });
            if let Some(root) = root {
                let consumed = if root.starts_with("self::") { root.len() - "self::".len() } else { root.len() };
                let mut j = i + consumed;
                tree(&code, &mut j, root.trim_end_matches("::"), &mut out);
                i = j;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Reads `a::b::{c, d::e}` after `prefix::`, pushing every full path.
fn tree(code: &str, j: &mut usize, prefix: &str, out: &mut Vec<String>) {
    let bytes = code.as_bytes();
    let mut path = prefix.to_owned();
    loop {
        while *j < bytes.len() && bytes[*j].is_ascii_whitespace() {
            *j += 1;
        }
        if *j < bytes.len() && bytes[*j] == b'{' {
            *j += 1;
            loop {
                while *j < bytes.len() && (bytes[*j].is_ascii_whitespace() || bytes[*j] == b',') {
                    *j += 1;
                }
                if *j >= bytes.len() || bytes[*j] == b'}' {
                    *j += 1;
                    return;
                }
                tree(code, j, &path, out);
            }
        }
        let start = *j;
        while *j < bytes.len() && (bytes[*j].is_ascii_alphanumeric() || bytes[*j] == b'_' || bytes[*j] == b'*') {
            *j += 1;
        }
        if start == *j {
            out.push(path);
            return;
        }
        path = format!("{path}::{}", &code[start..*j]);
        if code[*j..].starts_with("::") {
            *j += 2;
        } else {
            // `as alias`, `,`, `;`, `(` …: the path ends here.
            out.push(path);
            return;
        }
    }
}

/// The module file a path lands in: the deepest prefix that is a module.
fn resolve(from: &str, path: &str, modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let mut segments: Vec<&str> = from.split("::").collect();
    let mut rest: Vec<&str> = path.split("::").collect();
    match rest.first().copied() {
        Some("crate") => {
            segments = vec!["crate"];
            rest.remove(0);
        }
        Some("self") => {
            rest.remove(0);
        }
        Some("super") => {
            while rest.first() == Some(&"super") {
                rest.remove(0);
                segments.pop();
            }
        }
        _ => return None,
    }
    let mut best = None;
    let mut candidate: Vec<&str> = segments.clone();
    if modules.contains_key(&candidate.join("::")) {
        best = Some(candidate.join("::"));
    }
    for segment in rest {
        candidate.push(segment);
        let name = candidate.join("::");
        if modules.contains_key(&name) {
            best = Some(name);
        } else {
            break;
        }
    }
    best
}
