//! The agent alone, for boxes airlock does not fork itself: `airlock-agent --fd N`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(airlock_agent::standalone::main_with_args(&args));
}
