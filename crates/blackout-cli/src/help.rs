//! `blackout completions` and `blackout man`: their flags and examples,
//! and what they print of the command tree `main` hands them.

use std::io::Write;

use anyhow::{anyhow, Result};
use clap::Args;

pub(crate) const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  Install bash completion for your user:
    blackout completions bash > ~/.local/share/bash-completion/completions/blackout

  Install fish completion:
    blackout completions fish > ~/.config/fish/completions/blackout.fish";

pub(crate) const MAN_EXAMPLES: &str = "\
Examples:
  Read the manual page of blackout:
    blackout man | man -l -

  Install the page of the run command:
    blackout man run > ~/.local/share/man/man1/blackout-run.1";

#[derive(Args)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Args)]
pub(crate) struct ManArgs {
    /// A command (run, record, ...): its page instead of blackout's.
    #[arg(value_name = "COMMAND")]
    pub(crate) command: Option<String>,
}

pub(crate) fn cmd_completions(a: CompletionsArgs, mut top: clap::Command) -> Result<u8> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(a.shell, &mut top, "blackout", &mut out);
    out.flush()?;
    Ok(0)
}

pub(crate) fn cmd_man(a: ManArgs, mut top: clap::Command) -> Result<u8> {
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
