//! The repository a session's directory is in, and what of it above that directory plugin
//! processes may read (docs/guide/src/isolation.md, "A session in a subdirectory of a repository").
//!
//! A plugin process may read and write its session's directory; nothing above it. A session
//! in a subdirectory of a repository (any monorepo's `crates/foo`) then breaks the developer
//! tools its plugins run: git looks for the `.git` above (`fatal: not a git repository`),
//! cargo for the workspace's `Cargo.toml`, npm and pnpm for the workspace's `package.json`
//! and lockfile. So the policy grants, read-only, exactly what those tools read there:
//! - the repository's git directory: `.git`, or for a linked worktree or a submodule the
//!   directory its `.git` file points at (`gitdir: …`) and that one's `commondir`;
//! - the [`REPOSITORY_FILES`] (manifests, lockfiles, toolchain and ignore files) of each
//!   directory from the session's directory's parent up to the repository's top.
//!
//! The members' manifests of a Cargo workspace found there are granted too (cargo loads every
//! member from any one), and the repository's names may be listed, its files not read (git
//! lists the working tree for what is untracked). Not the rest of the repository (a `.env`
//! beside the workspace's `Cargo.toml` stays unreadable), and never anything under the user's home that [`SECRETS`] names: a
//! repository whose top is the home itself (a dotfiles repository) or above it (`/`) grants
//! nothing at all, since its `.git` holds the home's files. Every path is canonicalized
//! before it is judged, so a link in the repository cannot lead a grant elsewhere.
//!
//! Writes stay where the policy says: the enclosing `.git` is read-only unless the session
//! grants it (`--allow-write`), since a writable `.git/hooks` or `.git/config` would let a
//! plugin run code outside its sandbox the next time the user runs git. When a plugin's
//! result reads like such a write was refused, [`EnclosingRepository::write_refusal_hint`]
//! names the flag that grants it.

use std::path::{Component, Path, PathBuf};

use super::program_home::SECRETS;

/// What plugin processes may read in each directory from the session's directory's parent
/// up to the top of its repository, when it exists there: what git, cargo, npm, pnpm, yarn,
/// bun, uv and go read of a workspace above a member. Not `.npmrc`, `.yarnrc(.yml)`,
/// `.pypirc` or `.env` files: they may hold tokens.
pub const REPOSITORY_FILES: &[&str] = &[
    // git
    ".gitignore",
    ".gitattributes",
    ".gitmodules",
    ".mailmap",
    // cargo and rustup
    "Cargo.toml",
    "Cargo.lock",
    "rust-toolchain",
    "rust-toolchain.toml",
    ".cargo/config.toml",
    ".cargo/config",
    "rustfmt.toml",
    ".rustfmt.toml",
    "clippy.toml",
    ".clippy.toml",
    // npm, pnpm, yarn, bun, deno and the monorepo tools on top of them
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-workspace.yaml",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lock",
    "bun.lockb",
    "deno.json",
    "deno.jsonc",
    "tsconfig.json",
    "tsconfig.base.json",
    "lerna.json",
    "nx.json",
    "turbo.json",
    // python, go, and version managers' pins
    "pyproject.toml",
    "uv.lock",
    "poetry.lock",
    "go.work",
    "go.work.sum",
    ".editorconfig",
    ".tool-versions",
    ".nvmrc",
    ".node-version",
    ".python-version",
];

/// What one readable place of the enclosing repository is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepositoryPart {
    /// The git directory (`.git`, or where a `.git` file points).
    GitDir,
    /// The git directory a linked worktree's shares (its `commondir`): refs, objects, config.
    CommonDir,
    /// The `.git` file of a linked worktree or submodule.
    GitFile,
    /// One of [`REPOSITORY_FILES`].
    File,
}

impl RepositoryPart {
    /// Whether it is git's own (a write there is what `--allow-write` is asked for).
    pub fn is_git(self) -> bool {
        !matches!(self, RepositoryPart::File)
    }
}

/// One place of the enclosing repository plugin processes may read (canonical).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryRead {
    /// The file or directory (a directory with its contents).
    pub path: PathBuf,
    /// What it is.
    pub part: RepositoryPart,
}

/// The git repository a session's directory is in, and what of it above that directory plugin
/// processes may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnclosingRepository {
    /// The top of its working tree (canonical).
    pub root: PathBuf,
    /// What plugin processes may read of it besides the session's directory; empty when it
    /// is `withheld`.
    pub reads: Vec<RepositoryRead>,
    /// Where plugin processes may list names, not read files: its top, when that is above
    /// the session's directory (and not `withheld`). git lists the whole working tree to
    /// find what is untracked (`git status` from a subdirectory), cargo the directories of
    /// a workspace's `members = ["crates/*"]`.
    pub listable: Option<PathBuf>,
    /// Why nothing of it is granted (its top is the user's home or above it), if so.
    pub withheld: Option<String>,
}

impl EnclosingRepository {
    /// The repository `cwd` is in (`cwd` itself or a directory above it holds its `.git`),
    /// judged against the user's home; `None` outside any repository.
    pub fn find(cwd: &Path) -> Option<Self> {
        Self::find_with_home(cwd, std::env::home_dir().as_deref())
    }

    /// [`Self::find`] for a user whose home is `home`.
    pub fn find_with_home(cwd: &Path, home: Option<&Path>) -> Option<Self> {
        let cwd = dunce::canonicalize(cwd).ok()?;
        let (root, git_dir, dot_git_file) = cwd.ancestors().find_map(git_dir_of)?;
        let home = home.map(|home| dunce::canonicalize(home).unwrap_or_else(|_| home.to_owned()));
        if let Some(home) = &home {
            if home.starts_with(&root) {
                return Some(Self {
                    withheld: Some(format!(
                        "its top, {}, is {} home directory: its .git holds the home's files, \
                         so none of it is readable (--allow-read PATH grants what a tool needs)",
                        root.display(),
                        if *home == root { "the" } else { "above the" }
                    )),
                    root,
                    reads: Vec::new(),
                    listable: None,
                });
            }
        }
        let mut reads = Vec::new();
        let mut grant = |path: PathBuf, part: RepositoryPart| {
            // Already readable (the session's directory), already granted, or one a secret
            // of the home could be reached through.
            let harmless = home
                .as_deref()
                .is_none_or(|home| !reaches_secret(&path, home));
            if !path.starts_with(&cwd)
                && harmless
                && !reads.iter().any(|r: &RepositoryRead| r.path == path)
            {
                reads.push(RepositoryRead { path, part });
            }
        };
        if let Some(file) = dot_git_file {
            grant(file, RepositoryPart::GitFile);
        }
        if let Some(common) = common_dir_of(&git_dir) {
            grant(common, RepositoryPart::CommonDir);
        }
        grant(git_dir, RepositoryPart::GitDir);
        // From the session's directory's parent up to the top, each file where it leads, if
        // that stays in the repository (a link to `~/.ssh/id_ed25519` named `Cargo.toml`
        // grants nothing).
        for dir in cwd.ancestors().skip(1) {
            if !dir.starts_with(&root) {
                break;
            }
            for name in REPOSITORY_FILES {
                let Ok(file) = dunce::canonicalize(dir.join(name)) else {
                    continue;
                };
                if file.starts_with(&root) && file.is_file() {
                    let members = match *name {
                        "Cargo.toml" => cargo_members(&file),
                        _ => Vec::new(),
                    };
                    grant(file, RepositoryPart::File);
                    for member in members.into_iter().filter(|m| m.starts_with(&root)) {
                        grant(member, RepositoryPart::File);
                    }
                }
            }
        }
        Some(Self {
            listable: (root != cwd).then(|| root.clone()),
            root,
            reads,
            withheld: None,
        })
    }

    /// The paths plugin processes may read.
    pub fn readable(&self) -> impl Iterator<Item = &Path> {
        self.reads.iter().map(|read| read.path.as_path())
    }

    /// What of [`Self::reads`] stays read-only when plugin processes may write in `writable`
    /// (none of them is under one of those).
    pub fn read_only<'a>(
        &'a self,
        writable: &'a [PathBuf],
    ) -> impl Iterator<Item = &'a RepositoryRead> + 'a {
        let writable: Vec<PathBuf> = writable
            .iter()
            .map(|dir| dunce::canonicalize(dir).unwrap_or_else(|_| dir.clone()))
            .collect();
        self.reads
            .iter()
            .filter(move |read| !writable.iter().any(|dir| read.path.starts_with(dir)))
    }

    /// What to grant with `--allow-write` to write `read`: the repository's top for what is
    /// in it (its `.git` with it), otherwise the git directory itself (a linked worktree's
    /// common directory lives in another working tree).
    pub fn grant_for<'a>(&'a self, read: &'a RepositoryRead) -> &'a Path {
        if read.path.starts_with(&self.root) {
            &self.root
        } else {
            &read.path
        }
    }

    /// When `text` (a result's text, a program's standard error) says a write was refused
    /// (`Permission denied`, `Read-only file system`) on a path in a read-only part of this
    /// repository (with `writable` the session's writable directories), a line naming the
    /// path and the `--allow-write` that grants it. A relative path is taken relative to
    /// `cwd`, where the programs run unless told otherwise.
    pub fn write_refusal_hint(
        &self,
        text: &str,
        cwd: &Path,
        writable: &[PathBuf],
    ) -> Option<String> {
        let read_only: Vec<&RepositoryRead> = self.read_only(writable).collect();
        if read_only.is_empty() {
            return None;
        }
        text.lines()
            .filter(|line| is_refused_write(line))
            .flat_map(mentioned_paths)
            .find_map(|mentioned| {
                let path = resolve(cwd, Path::new(mentioned));
                let read = read_only.iter().find(|read| path.starts_with(&read.path))?;
                Some(read_only_in_sandbox(
                    &path,
                    &self.root,
                    self.grant_for(read),
                ))
            })
    }
}

/// What a host says when a plugin's program was refused a write in the enclosing repository
/// of its session's directory (its `.git` first), which plugin processes may read but not
/// write unless granted: `path` (what was refused), `root` (the repository's top), `grant`
/// (what `--allow-write` must name).
pub fn read_only_in_sandbox(path: &Path, root: &Path, grant: &Path) -> String {
    format!(
        "{} is read-only in this sandbox (the enclosing repository {} may be read, not \
         written, by plugin processes); grant it with --allow-write {}",
        path.display(),
        root.display(),
        grant.display()
    )
}

/// Whether `dir` holds a repository's `.git`: the top, the git directory (canonical), and
/// the `.git` file when it is one.
fn git_dir_of(dir: &Path) -> Option<(PathBuf, PathBuf, Option<PathBuf>)> {
    let dot_git = dir.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    let (git_dir, file) = if meta.is_file() {
        // `gitdir: PATH`, relative to the directory of the file (git's `read_gitfile`).
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
        let git_dir = dunce::canonicalize(dir.join(target)).ok()?;
        (git_dir, Some(dot_git))
    } else {
        (dunce::canonicalize(&dot_git).ok()?, None)
    };
    // What git itself takes for a git directory: a `HEAD`, or a `commondir` to one. A `.git`
    // that is neither is not a repository; git looks further up, and so does this.
    let valid = git_dir.join("HEAD").is_file() || git_dir.join("commondir").is_file();
    valid.then(|| (dir.to_owned(), git_dir, file))
}

/// The common directory of a linked worktree's git directory (`commondir`, relative to it).
fn common_dir_of(git_dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_dir.join("commondir")).ok()?;
    let common = text.lines().next()?.trim();
    dunce::canonicalize(git_dir.join(common)).ok()
}

/// The largest manifest read for its workspace's members; a bigger one is not a workspace
/// manifest anyone writes.
const MAX_MANIFEST: u64 = 1 << 20;

/// The most directories a member pattern is matched against: a pattern of a huge tree grants
/// what it matched until then.
const MAX_MEMBER_CANDIDATES: usize = 10_000;

/// The manifests (canonical) of the members of the Cargo workspace whose root manifest is
/// `manifest` (`[workspace] members`, each a path or a glob of `*` and `?` in its
/// components): cargo reads each of them to load the workspace from any one. None when it is
/// no workspace's root or cannot be read.
fn cargo_members(manifest: &Path) -> Vec<PathBuf> {
    let Some(dir) = manifest.parent() else {
        return Vec::new();
    };
    let small = std::fs::metadata(manifest).is_ok_and(|meta| meta.len() <= MAX_MANIFEST);
    let Some(text) = small
        .then(|| std::fs::read_to_string(manifest).ok())
        .flatten()
    else {
        return Vec::new();
    };
    let Ok(document) = toml_edit::Document::parse(text) else {
        return Vec::new();
    };
    let patterns: Vec<String> = document
        .get("workspace")
        .and_then(|workspace| workspace.get("members"))
        .and_then(|members| members.as_array())
        .map(|members| {
            members
                .iter()
                .filter_map(|member| member.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut budget = MAX_MEMBER_CANDIDATES;
    let mut manifests = Vec::new();
    for pattern in patterns {
        for member in expand(dir, Path::new(&pattern), &mut budget) {
            if let Ok(file) = dunce::canonicalize(member.join("Cargo.toml")) {
                if file.is_file() && !manifests.contains(&file) {
                    manifests.push(file);
                }
            }
        }
    }
    manifests
}

/// The directories under `base` that `pattern` names, its components matched one by one
/// (`*` and `?` within a component; `..` and absolute paths kept as they are).
fn expand(base: &Path, pattern: &Path, budget: &mut usize) -> Vec<PathBuf> {
    let mut found = vec![base.to_owned()];
    for component in pattern.components() {
        let Component::Normal(name) = component else {
            found.iter_mut().for_each(|dir| dir.push(component));
            continue;
        };
        let name = name.to_string_lossy();
        if !name.contains(['*', '?']) {
            found.iter_mut().for_each(|dir| dir.push(&*name));
            continue;
        }
        let mut next = Vec::new();
        for dir in &found {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if *budget == 0 {
                    return next;
                }
                *budget -= 1;
                let entry_name = entry.file_name();
                if wildcard(&name, &entry_name.to_string_lossy()) && entry.path().is_dir() {
                    next.push(entry.path());
                }
            }
        }
        found = next;
    }
    found
}

/// Whether `name` matches `pattern`, where `*` is any run of characters and `?` any one
/// (cargo's globs within a path component; a leading `.` is matched like any character).
fn wildcard(pattern: &str, name: &str) -> bool {
    let (pattern, name): (Vec<char>, Vec<char>) =
        (pattern.chars().collect(), name.chars().collect());
    let (mut p, mut n) = (0, 0);
    // Where the last `*` was, and the name position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(c) if *c == '?' || *c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                // Let the last `*` take one more character.
                Some((at, from)) => {
                    p = at + 1;
                    n = from + 1;
                    star = Some((at, from + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// Whether granting `path` would grant one of the home's [`SECRETS`] or the home itself: it
/// is the home or above it, one of them, in one, or holds one.
fn reaches_secret(path: &Path, home: &Path) -> bool {
    home.starts_with(path)
        || SECRETS.iter().any(|secret| {
            let secret = home.join(secret);
            path.starts_with(&secret) || secret.starts_with(path)
        })
}

/// Whether a line of output reads like a refused write.
fn is_refused_write(line: &str) -> bool {
    [
        "Permission denied",
        "Read-only file system",
        "os error 13)",
        "os error 30)",
    ]
    .iter()
    .any(|marker| line.contains(marker))
}

/// The words of `line` that look like paths (with a `/`, or `.git`), without the quotes and
/// punctuation around them.
fn mentioned_paths(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| c.is_whitespace() || "'\"`()[]{},".contains(c))
        .map(|word| word.trim_end_matches([':', ';', '.']))
        .filter(|word| word.contains('/') || *word == ".git")
}

/// `path` as an absolute path from `cwd`, `.` and `..` taken away, then its longest existing
/// part canonicalized (what a program names may not exist, a lock file it failed to create).
fn resolve(cwd: &Path, path: &Path) -> PathBuf {
    let mut plain = PathBuf::new();
    for component in cwd.join(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                plain.pop();
            }
            other => plain.push(other),
        }
    }
    let mut existing = plain.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = dunce::canonicalize(existing) {
            return rest
                .iter()
                .rev()
                .fold(canonical, |path, name| path.join(name));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return plain,
        }
    }
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
mod tests {
    use super::*;

    /// A repository at `<tmp>/repo` with `sub/deeper`, a workspace manifest, a lockfile and
    /// a `.env` beside them; the canonical top.
    fn repository(tmp: &Path) -> PathBuf {
        let root = tmp.join("repo");
        std::fs::create_dir_all(root.join(".git/refs/heads")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        for file in [
            "Cargo.toml",
            "Cargo.lock",
            ".env",
            "sub/package.json",
            "README.md",
        ] {
            std::fs::write(root.join(file), "x").unwrap();
        }
        dunce::canonicalize(root).unwrap()
    }

    fn paths(repository: &EnclosingRepository) -> Vec<PathBuf> {
        repository.readable().map(Path::to_path_buf).collect()
    }

    #[test]
    fn a_subdirectory_reads_the_git_directory_and_the_listed_files_above_it_only() {
        let tmp = tempfile::tempdir().unwrap();
        let root = repository(tmp.path());
        let found = EnclosingRepository::find_with_home(
            &root.join("sub/deeper"),
            Some(Path::new("/nonexistent-home")),
        )
        .unwrap();
        assert_eq!(found.root, root);
        assert_eq!(found.withheld, None);
        assert_eq!(found.listable, Some(root.clone()));
        assert_eq!(
            paths(&found),
            [
                root.join(".git"),
                root.join("sub/package.json"),
                root.join("Cargo.toml"),
                root.join("Cargo.lock"),
            ]
        );
        assert_eq!(found.reads[0].part, RepositoryPart::GitDir);
    }

    #[test]
    fn at_the_top_nothing_more_is_readable_and_outside_a_repository_nothing_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = repository(tmp.path());
        let top = EnclosingRepository::find_with_home(&root, None).unwrap();
        assert_eq!((top.root.as_path(), top.reads.len()), (root.as_path(), 0));
        assert_eq!(top.listable, None);
        let outside = tmp.path().join("elsewhere");
        std::fs::create_dir(&outside).unwrap();
        assert_eq!(EnclosingRepository::find_with_home(&outside, None), None);
        // A `.git` that is no git directory is not a repository.
        std::fs::create_dir(outside.join(".git")).unwrap();
        assert_eq!(EnclosingRepository::find_with_home(&outside, None), None);
    }

    #[test]
    fn a_cargo_workspace_grants_its_members_manifests_and_nothing_else_of_them() {
        let tmp = tempfile::tempdir().unwrap();
        let root = repository(tmp.path());
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"sub\", \"crates/*\", \"tools/a?\"]\n",
        )
        .unwrap();
        for member in ["crates/one", "crates/two", "tools/ab", "tools/abc", "sub"] {
            std::fs::create_dir_all(root.join(member).join("src")).unwrap();
            std::fs::write(root.join(member).join("Cargo.toml"), "[package]\n").unwrap();
            std::fs::write(root.join(member).join("src/lib.rs"), "").unwrap();
        }
        let found = EnclosingRepository::find_with_home(&root.join("sub"), None).unwrap();
        let mut members: Vec<PathBuf> = paths(&found)
            .into_iter()
            .filter(|path| path.ends_with("Cargo.toml") && *path != root.join("Cargo.toml"))
            .collect();
        members.sort();
        assert_eq!(
            members,
            [
                root.join("crates/one/Cargo.toml"),
                root.join("crates/two/Cargo.toml"),
                root.join("tools/ab/Cargo.toml"),
            ]
        );
        assert!(wildcard("a*b?c", "axxbyc") && !wildcard("a*b?c", "axxbc") && wildcard("*", ""));
    }

    #[test]
    fn a_repository_at_the_home_or_above_grants_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let root = repository(tmp.path());
        for home in [root.clone(), root.join("sub")] {
            let found =
                EnclosingRepository::find_with_home(&root.join("sub/deeper"), Some(&home)).unwrap();
            assert!(
                found.reads.is_empty() && found.listable.is_none(),
                "{found:?}"
            );
            assert!(found.withheld.unwrap().contains("home directory"));
        }
    }

    #[test]
    fn links_leading_out_of_the_repository_or_to_a_secret_grant_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let root = repository(tmp.path());
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_ed25519"), "SECRET").unwrap();
        std::fs::remove_file(root.join("Cargo.lock")).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), root.join("Cargo.lock")).unwrap();
        let found = EnclosingRepository::find_with_home(&root.join("sub"), Some(&home)).unwrap();
        assert_eq!(paths(&found), [root.join(".git"), root.join("Cargo.toml")]);
    }

    #[test]
    fn a_linked_worktree_reads_its_git_directory_and_the_common_one() {
        let tmp = tempfile::tempdir().unwrap();
        let main = repository(tmp.path());
        let own = main.join(".git/worktrees/wt");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("HEAD"), "ref: refs/heads/wt\n").unwrap();
        std::fs::write(own.join("commondir"), "../..\n").unwrap();
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(wt.join("sub")).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", own.display())).unwrap();
        let wt = dunce::canonicalize(wt).unwrap();
        let found = EnclosingRepository::find_with_home(&wt.join("sub"), None).unwrap();
        assert_eq!(found.root, wt);
        assert_eq!(
            found.reads,
            [
                RepositoryRead {
                    path: wt.join(".git"),
                    part: RepositoryPart::GitFile
                },
                RepositoryRead {
                    path: main.join(".git"),
                    part: RepositoryPart::CommonDir
                },
                RepositoryRead {
                    path: own.clone(),
                    part: RepositoryPart::GitDir
                },
            ]
        );
        // Writing the common directory takes granting it, not the worktree's top.
        let hint = found
            .write_refusal_hint(
                &format!(
                    "error: Unable to create '{}/refs/heads/x.lock': Permission denied",
                    main.join(".git").display()
                ),
                &wt.join("sub"),
                std::slice::from_ref(&wt.join("sub")),
            )
            .unwrap();
        assert!(
            hint.ends_with(&format!("--allow-write {}", main.join(".git").display())),
            "{hint}"
        );
    }

    #[test]
    fn a_refused_write_in_the_git_directory_names_the_flag_and_others_do_not() {
        let tmp = tempfile::tempdir().unwrap();
        let root = repository(tmp.path());
        let cwd = root.join("sub");
        let found = EnclosingRepository::find_with_home(&cwd, None).unwrap();
        let writable = [cwd.clone()];
        let lock = root.join(".git/refs/heads/m1.lock");
        let refused = format!(
            "error: cannot lock ref 'refs/heads/m1': Unable to create '{}': Permission denied",
            lock.display()
        );
        let hint = found.write_refusal_hint(&refused, &cwd, &writable).unwrap();
        assert_eq!(hint, read_only_in_sandbox(&lock, &root, &root));
        // Relative to the directory the program ran in.
        let relative = "fatal: Unable to create '../.git/index.lock': Read-only file system";
        assert!(found
            .write_refusal_hint(relative, &cwd, &writable)
            .is_some());
        // Not a refusal, not in the repository's read-only parts, or granted: nothing.
        let other = format!("Unable to create '{}': File exists", lock.display());
        assert_eq!(found.write_refusal_hint(&other, &cwd, &writable), None);
        let elsewhere = "cannot open '/etc/shadow': Permission denied";
        assert_eq!(found.write_refusal_hint(elsewhere, &cwd, &writable), None);
        assert_eq!(
            found.write_refusal_hint(&refused, &cwd, &[cwd.clone(), root.clone()]),
            None
        );
    }
}
