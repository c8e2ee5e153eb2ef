//! PID 1 of an airlock microVM (see `airlock_microvm_guest::init`).

fn main() {
    airlock_microvm_guest::init::main()
}
