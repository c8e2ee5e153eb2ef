//! Finds a virtio-serial port by the name the host gave it.

use super::sys::{InitError, Result};
use std::time::{Duration, Instant};

/// How long the ports may take to appear after the console driver loads.
const PORT_WAIT: Duration = Duration::from_secs(10);

/// Opens the port named `name` (`/dev/vportNpM` whose `/sys/class/virtio-ports/*/name` is it).
pub fn open(name: &str) -> Result<std::fs::File> {
    let deadline = Instant::now() + PORT_WAIT;
    loop {
        if let Ok(dir) = std::fs::read_dir("/sys/class/virtio-ports") {
            for entry in dir.flatten() {
                let named = std::fs::read_to_string(entry.path().join("name")).unwrap_or_default();
                if named.trim() == name {
                    let dev = format!("/dev/{}", entry.file_name().to_string_lossy());
                    return std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open(&dev)
                        .map_err(|source| InitError {
                            what: format!("cannot open the virtio port {dev} ({name})"),
                            source,
                        });
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(InitError {
                what: format!("the virtio port {name} did not appear"),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
