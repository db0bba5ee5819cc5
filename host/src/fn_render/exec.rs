//! `exec:` functions: a local program gets the ResourceList on stdin and
//! writes the result to stdout, as kpt runs them under `--allow-exec`,
//! stopped after a timeout. The program leads a process group of its own
//! (a timeout stops the group, its children included), and on Linux it is
//! killed when the command that started it dies, however it dies.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pv_core::render::RunOutput;

/// Most output read from a function (stdout and stderr each).
pub const MAX_OUTPUT: usize = 64 << 20;

/// Splits an exec string into words as a POSIX shell would without
/// expansions (kpt uses shlex): quotes and backslashes group, nothing else.
pub fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("EOF found when expecting closing quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err("EOF found after escape character".into()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err("EOF found when expecting closing quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => cur.push(c),
                    None => return Err("EOF found after escape character".into()),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// Runs an exec function in `dir` with `input` on stdin; stops it after
/// `timeout`.
pub fn run(exec: &str, dir: &Path, input: &str, timeout: Duration) -> Result<RunOutput, String> {
    let words =
        split_words(exec).map_err(|e| format!("exec command {exec:?} must be valid: {e}"))?;
    let Some((program, args)) = words.split_first() else {
        return Err(format!(
            "exec command {exec:?} must be valid: empty command"
        ));
    };
    let program_path = if program.contains('/') && !program.starts_with('/') {
        dir.join(program)
    } else {
        PathBuf::from(program)
    };
    run_program(exec, &program_path, args, dir, input, timeout)
}

/// Runs `program` with `args` in `dir`, `input` on stdin, in its own
/// process group, stopped after `timeout`; `name` is how messages call it.
pub fn run_program(
    name: &str,
    program: &Path,
    args: &[String],
    dir: &Path,
    input: &str,
    timeout: Duration,
) -> Result<RunOutput, String> {
    let exec = name;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    #[cfg(target_os = "linux")]
    dies_with_parent::arrange(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("failed to run {exec:?}: {e}"))?;
    let mut stdin = child.stdin.take();
    let input = input.to_string();
    let writer = std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            // A function may exit without reading all of its input.
            let _ = s.write_all(input.as_bytes());
        }
    });
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let read = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(r) = r {
                let _ = r.take(MAX_OUTPUT as u64 + 1).read_to_end(&mut buf);
            }
            buf
        })
    };
    let out_t = read(stdout.map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err_t = read(stderr.map(|s| Box::new(s) as Box<dyn Read + Send>));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= timeout => {
                // The whole group: what the function started goes too.
                #[cfg(unix)]
                if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                let _ = writer.join();
                return Err(format!(
                    "function {exec:?} did not finish within {}s and was stopped",
                    timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for {exec:?}: {e}")),
        }
    };
    let _ = writer.join();
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    if stdout.len() > MAX_OUTPUT {
        return Err(format!(
            "function {exec:?} wrote more than {} MiB to stdout",
            MAX_OUTPUT >> 20
        ));
    }
    Ok(RunOutput {
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr[..stderr.len().min(MAX_OUTPUT)]).into_owned(),
        exit_code: status.code().unwrap_or(1),
    })
}

/// A function started by this process gets SIGKILL when the thread that
/// started it ends, which a `kill -9` of the command is too: no function
/// outlives the render it ran for.
#[cfg(target_os = "linux")]
mod dies_with_parent {
    #![allow(unsafe_code)]

    use std::os::unix::process::CommandExt;

    /// Makes `cmd`'s process ask for the parent-death signal before it
    /// runs the program (and not run it if the parent is gone already).
    pub fn arrange(cmd: &mut std::process::Command) {
        let parent = rustix::process::getpid();
        // SAFETY: the closure runs in the child between fork and exec,
        // where only async-signal-safe calls may be made: it makes two
        // system calls (prctl, getppid) and allocates nothing but the
        // error of a failed one.
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))?;
                if rustix::process::getppid() != Some(parent) {
                    return Err(std::io::Error::other("the render that started it is gone"));
                }
                Ok(())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_a_shell_without_expansion() {
        assert_eq!(
            split_words(r#"fn --a "b c" 'd e' f\ g"#).expect("splits"),
            vec!["fn", "--a", "b c", "d e", "f g"]
        );
        assert!(split_words("fn 'open").is_err());
    }

    #[test]
    fn a_function_that_never_exits_is_stopped() {
        let start = Instant::now();
        let err = run(
            "sleep 30",
            &PathBuf::from("."),
            "",
            Duration::from_millis(300),
        )
        .expect_err("stopped");
        assert!(err.contains("did not finish"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn stdin_goes_in_and_stdout_and_exit_code_come_back() {
        let out = run(
            "sh -c 'cat; echo oops >&2; exit 3'",
            &PathBuf::from("."),
            "hello",
            Duration::from_secs(10),
        )
        .expect("runs");
        assert_eq!(out.stdout, "hello");
        assert_eq!(out.stderr, "oops\n");
        assert_eq!(out.exit_code, 3);
    }
}
