//! `blackout completions` and `blackout man`.

use std::io::Write;

use anyhow::{anyhow, Result};
use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs, ManArgs};

pub(crate) fn cmd_completions(a: CompletionsArgs) -> Result<u8> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(a.shell, &mut Cli::command(), "blackout", &mut out);
    out.flush()?;
    Ok(0)
}

pub(crate) fn cmd_man(a: ManArgs) -> Result<u8> {
    let mut top = Cli::command();
    top.build();
    let page = match &a.command {
        None => top,
        Some(name) => {
            let sub = top
                .get_subcommands()
                .find(|c| c.get_name() == name)
                .ok_or_else(|| {
                    let names: Vec<&str> = top.get_subcommands().map(|c| c.get_name()).collect();
                    anyhow!("`{name}` is not a command ({})", names.join(", "))
                })?;
            sub.clone()
        }
    };
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(page)
        .source(format!("blackout {}", env!("CARGO_PKG_VERSION")))
        .render(&mut out)?;
    out.flush()?;
    Ok(0)
}
