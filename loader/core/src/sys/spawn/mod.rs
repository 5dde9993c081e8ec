//! Starting a plugin child (`xcsh-plugin-host`): the link it talks to the host over, the
//! plugin file it is handed, what makes it die with its host and end everything it started,
//! and naming how it ended. One interface, one module per platform family:
//!
//! - [`hand_over`] makes the link and prepares the command; [`Handover::started`], once the
//!   child runs, gives the [`Containment`] that ends it and all it started;
//! - in the child, [`take_link`] and [`take_plugin`] take what it was handed;
//! - [`describe_exit`] names an end: `killed by SIGSEGV`, `crashed: access violation`.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
