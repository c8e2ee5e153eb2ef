//! Runs `airlock wasm-run` arguments directly (development aid): `cargo run -p airlock-wasm
//! --example wasm_run -- --module M.wasm -- argv…`.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(airlock_wasm::runner::main(&args));
}
