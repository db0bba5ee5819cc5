//! Reformats every file of a directory the way `porch-variants fmt` does,
//! for differential checks against tools/kyaml-oracle:
//! `cargo run --release -p porch-variants-core --example reformat -- IN OUT`
//! writes `OUT/<name>.out` (the output) or `OUT/<name>.err` (the error).

use pv_core::yaml;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(input), Some(output)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: reformat IN_DIR OUT_DIR");
        std::process::exit(2);
    };
    std::fs::create_dir_all(output)?;
    for entry in std::fs::read_dir(input)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let out = |ext: &str| std::path::Path::new(output).join(format!("{name}.{ext}"));
        let bytes = std::fs::read(&path)?;
        let result = match String::from_utf8(bytes) {
            Ok(text) => yaml::reformat(&text).map_err(|e| e.to_string()),
            Err(_) => Err("not UTF-8".to_owned()),
        };
        match result {
            Ok(text) => std::fs::write(out("out"), text)?,
            Err(e) => std::fs::write(out("err"), e + "\n")?,
        }
    }
    Ok(())
}
