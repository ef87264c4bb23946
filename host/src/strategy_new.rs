//! `crucible strategy new NAME --lang rust|python|js`: a working strategy project to start
//! from, with its build command in its README.
//!
//! Each project carries what it needs to build on its own: the WIT world (`wit/strategy.wit`,
//! the current `crucible:strategy@0.3.0`),
//! and for Python the `crucible_strategy` helper package (bundled into the component). A Rust
//! project depends on the `crucible-sdk` of the checkout this binary was built from. Every
//! template declares a tunable parameter and reads it (the SDK's `IntParam` in Rust and Python,
//! the example's `intParam` in JavaScript), so a new project shows the pattern.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    /// Project name: letters, digits, `-` and `_`, starting with a letter. Also the directory.
    pub name: String,
    /// Language of the strategy.
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    pub lang: Lang,
    /// Directory to create the project in (default: `./NAME`).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Lang {
    Rust,
    Python,
    Js,
}

const WIT: &str = include_str!("../../wit/strategy.wit");

const RUST: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../scaffold/rust/Cargo.toml")),
    ("src/lib.rs", include_str!("../scaffold/rust/lib.rs")),
    ("README.md", include_str!("../scaffold/rust/README.md")),
];

const PYTHON: &[(&str, &str)] = &[
    ("app.py", include_str!("../scaffold/python/app.py")),
    ("build.sh", include_str!("../scaffold/python/build.sh")),
    ("README.md", include_str!("../scaffold/python/README.md")),
    (
        "crucible_strategy/__init__.py",
        include_str!("../../sdk-python/src/crucible_strategy/__init__.py"),
    ),
    (
        "crucible_strategy/indicators.py",
        include_str!("../../sdk-python/src/crucible_strategy/indicators.py"),
    ),
    (
        "crucible_strategy/model.py",
        include_str!("../../sdk-python/src/crucible_strategy/model.py"),
    ),
    (
        "crucible_strategy/orders.py",
        include_str!("../../sdk-python/src/crucible_strategy/orders.py"),
    ),
    (
        "crucible_strategy/params.py",
        include_str!("../../sdk-python/src/crucible_strategy/params.py"),
    ),
    (
        "crucible_strategy/state.py",
        include_str!("../../sdk-python/src/crucible_strategy/state.py"),
    ),
];

const JS: &[(&str, &str)] = &[
    // The example is the template: what CI builds and backtests is what authors start from.
    ("app.js", include_str!("../../examples/js-momentum/app.js")),
    ("package.json", include_str!("../scaffold/js/package.json")),
    (
        "build.mjs",
        include_str!("../../examples/js-momentum/build.mjs"),
    ),
    ("README.md", include_str!("../scaffold/js/README.md")),
];

/// Create the project; returns its directory.
pub(crate) fn run(args: &NewArgs) -> anyhow::Result<PathBuf> {
    validate_name(&args.name)?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if dir.exists()
        && dir
            .read_dir()
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        bail!("{} exists and is not empty", dir.display());
    }
    let crate_name = args.name.replace('_', "-");
    let sdk_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk-guest");
    let sdk_path = sdk_path.canonicalize().unwrap_or(sdk_path);
    let fill = |template: &str| {
        template
            .replace("{{name}}", &args.name)
            .replace("{{crate}}", &crate_name)
            .replace("{{crate_file}}", &crate_name.replace('-', "_"))
            .replace("{{sdk_path}}", &sdk_path.display().to_string())
    };
    let files = match args.lang {
        Lang::Rust => RUST,
        Lang::Python => PYTHON,
        Lang::Js => JS,
    };
    write(&dir.join("wit/strategy.wit"), WIT)?;
    for (path, template) in files {
        write(&dir.join(path), &fill(template))?;
    }
    if args.lang == Lang::Python {
        make_executable(&dir.join("build.sh"))?;
    }
    Ok(dir)
}

/// What to run next, printed after the project is created.
pub(crate) fn next_steps(lang: Lang, dir: &Path) -> String {
    let build = match lang {
        Lang::Rust => "cargo build --release --target wasm32-wasip2",
        Lang::Python => "pip install componentize-py && ./build.sh",
        Lang::Js => "npm install && npm run build",
    };
    format!(
        "created {}\nnext: cd {} && {build}   (see its README.md)",
        dir.display(),
        dir.display()
    )
}

fn validate_name(name: &str) -> anyhow::Result<()> {
    let mut chars = name.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !starts_with_letter || !rest_ok || name.len() > 64 {
        bail!(
            "`{name}` is not a usable project name: letters, digits, `-` and `_`, starting with \
             a letter, at most 64 characters"
        );
    }
    Ok(())
}

fn write(path: &Path, contents: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(unix)]
fn make_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["momentum", "my-strategy", "s_2"] {
            assert!(validate_name(good).is_ok(), "{good}");
        }
        for bad in ["", "2fast", "../escape", "with space", "a/b"] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn each_language_gets_its_files_and_the_wit() {
        let root = tempfile::tempdir().expect("tempdir");
        for (lang, entry, declares) in [
            (Lang::Rust, "src/lib.rs", "fn params()"),
            (Lang::Python, "app.py", "def params(self)"),
            (Lang::Js, "app.js", "export function params()"),
        ] {
            let dir = root.path().join(format!("{lang:?}"));
            let args = NewArgs {
                name: "trend-one".into(),
                lang,
                dir: Some(dir.clone()),
            };
            assert_eq!(run(&args).expect("scaffold"), dir);
            // The strategy declares its parameters, as the 0.3.0 world asks.
            let source = std::fs::read_to_string(dir.join(entry)).expect("entry");
            assert!(source.contains(declares), "{lang:?}: {entry}");
            if lang == Lang::Python {
                for module in ["indicators", "orders", "state", "model", "params"] {
                    let path = format!("crucible_strategy/{module}.py");
                    assert!(dir.join(&path).is_file(), "{path}");
                }
            }
            let wit = std::fs::read_to_string(dir.join("wit/strategy.wit")).expect("wit");
            // The current contract (0.3.0: `model` and `params` included), what the SDKs target.
            assert!(wit.contains("package crucible:strategy@0.3.0"));
            assert!(wit.contains("interface model"));
            assert!(wit.contains("export params: func()"));
            let readme = std::fs::read_to_string(dir.join("README.md")).expect("readme");
            assert!(
                readme.contains("trend-one") && !readme.contains("{{"),
                "{readme}"
            );
            // Never over an existing project.
            assert!(run(&args).is_err());
        }
    }
}
