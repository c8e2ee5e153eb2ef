//! Compiles a module into the cache (development aid): `wasm_compile MODULE.wasm CACHE_DIR`;
//! prints the compiled file's path.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(module), Some(cache)) = (args.first(), args.get(1)) else {
        eprintln!("usage: wasm_compile MODULE.wasm CACHE_DIR");
        std::process::exit(2);
    };
    let run = || -> Result<std::path::PathBuf, airlock_wasm::engine::EngineError> {
        let engine = airlock_wasm::engine::engine(airlock_wasm::engine::MemoryStyle::Reserved)?;
        let bytes =
            std::fs::read(module).map_err(|source| airlock_wasm::engine::EngineError::Read {
                path: module.into(),
                source,
            })?;
        let digest = airlock_wasm::engine::module_digest(&bytes);
        airlock_wasm::engine::ensure_compiled(&engine, module.as_ref(), &digest, cache.as_ref())
    };
    match run() {
        Ok(p) => println!("{}", p.display()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
