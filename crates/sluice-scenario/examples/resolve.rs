//! Prints a scenario resolved, or the error: `cargo run -p sluice-scenario --example resolve -- FILE [KEY=VALUE...]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(file) = args.next() else {
        eprintln!("usage: resolve FILE [KEY=VALUE...]");
        std::process::exit(2);
    };
    let sets: Vec<String> = args.collect();
    let result =
        sluice_scenario::load(std::path::Path::new(&file), &sets, None).and_then(|s| sluice_scenario::resolve(&s));
    match result {
        Ok(resolved) => print!("{}", sluice_scenario::resolved_toml(&resolved)),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
