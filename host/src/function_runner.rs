//! A client of Porch's function runner: the `FunctionEvaluator` gRPC
//! service (`func/evaluator/evaluator.proto` in Porch) that porch-server
//! sends every function that is not one of its builtins.
//!
//! One call, `EvaluateFunction`: a serialized ResourceList and the image
//! in, the output ResourceList and the function's log (stderr) out. As
//! porch-server uses it: plaintext HTTP/2 (no TLS, no authentication), the
//! same message size limit on what is sent and what is received, a
//! deadline per call, and gRPC status `NotFound` for an image the runner
//! does not know. A call that finds the runner unavailable (not listening,
//! or the connection lost) is tried again a few times, with a growing pause.
//!
//! The messages are written out here with `prost`'s derive rather than
//! generated at build time, which would need `protoc` on every machine
//! that builds this crate; the proto has three fields each way.
//!
//! [`FunctionRunner`] is synchronous, as a render's function runtime is:
//! it keeps a thread with its own async runtime for the gRPC calls, so it
//! can be used from any thread, inside an async runtime's blocking threads
//! or outside any.

use std::sync::mpsc;
use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

/// The messages of Porch's `evaluator.proto`.
pub mod proto {
    /// `evaluator.EvaluateFunctionRequest`.
    #[derive(Clone, PartialEq, ::prost::Message)]
    pub struct EvaluateFunctionRequest {
        /// The serialized ResourceList (YAML).
        #[prost(bytes = "vec", tag = "1")]
        pub resource_list: Vec<u8>,
        /// The image naming the function.
        #[prost(string, tag = "2")]
        pub image: String,
        /// A tag or semver constraint (optional).
        #[prost(string, tag = "3")]
        pub tag: String,
    }

    /// `evaluator.EvaluateFunctionResponse`.
    #[derive(Clone, PartialEq, ::prost::Message)]
    pub struct EvaluateFunctionResponse {
        /// The output ResourceList, with the function's results.
        #[prost(bytes = "vec", tag = "1")]
        pub resource_list: Vec<u8>,
        /// What the function wrote to stderr.
        #[prost(bytes = "vec", tag = "2")]
        pub log: Vec<u8>,
    }

    /// The service's name, as the method path spells it.
    pub const SERVICE: &str = "evaluator.FunctionEvaluator";
    /// The method path of `EvaluateFunction`.
    pub const EVALUATE_FUNCTION: &str = "/evaluator.FunctionEvaluator/EvaluateFunction";
}

/// Porch's default message size limit (porch-server's
/// `--max-request-body-size`), on what is sent and what is received.
pub const DEFAULT_MAX_MESSAGE: usize = 6 * 1024 * 1024;

/// How often a call that found the runner unavailable is tried again.
pub const RETRIES: u32 = 3;

/// How to reach the function runner.
#[derive(Debug, Clone, clap::Args)]
pub struct RunnerArgs {
    /// Porch's function runner (`HOST:PORT` or `http://HOST:PORT`; Porch's
    /// deployment: `function-runner.porch-system.svc:9445`): functions that
    /// are not builtins, exec or wasm functions, nor the embedded starlark
    /// function are sent there.
    #[arg(long, value_name = "ADDR", env = "PORCH_VARIANTS_FUNCTION_RUNNER")]
    pub function_runner: Option<String>,
    /// Seconds a function may take in the runner.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub function_runner_timeout: u64,
    /// Largest gRPC message sent to or received from the runner, in bytes
    /// (porch-server's `--max-request-body-size`).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_MESSAGE)]
    pub max_grpc_message_size: usize,
}

impl Default for RunnerArgs {
    fn default() -> Self {
        RunnerArgs {
            function_runner: None,
            function_runner_timeout: 300,
            max_grpc_message_size: DEFAULT_MAX_MESSAGE,
        }
    }
}

impl RunnerArgs {
    /// The runner these flags name, if any.
    pub fn runner(&self) -> Result<Option<FunctionRunner>, RunnerError> {
        self.function_runner
            .as_deref()
            .map(|address| {
                FunctionRunner::connect(RunnerConfig {
                    address: address.to_string(),
                    timeout: Duration::from_secs(self.function_runner_timeout),
                    max_message: self.max_grpc_message_size,
                })
            })
            .transpose()
    }
}

/// Where the runner is and the limits of a call.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// `HOST:PORT` or an `http://` URL.
    pub address: String,
    /// The deadline of one call.
    pub timeout: Duration,
    /// The message size limit, both ways.
    pub max_message: usize,
}

/// Why a function did not run in the runner.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RunnerError {
    /// The address is not one a channel can be made to.
    #[error("function runner address {address:?}: {message}")]
    Address {
        /// The address given.
        address: String,
        /// Why it is refused.
        message: String,
    },
    /// The runner does not know the image.
    #[error("function {image:?} not found in the function runner at {address}")]
    NotFound {
        /// The image.
        image: String,
        /// The runner.
        address: String,
    },
    /// The function took longer than the deadline.
    #[error("func eval {image:?} failed: no answer from the function runner at {address} within {seconds} s (--function-runner-timeout)")]
    Timeout {
        /// The image.
        image: String,
        /// The runner.
        address: String,
        /// The deadline.
        seconds: u64,
    },
    /// The runner could not be reached, after the retries.
    #[error("func eval {image:?} failed: the function runner at {address} is unavailable ({message}), tried {tries} times")]
    Unavailable {
        /// The image.
        image: String,
        /// The runner.
        address: String,
        /// The last status's message.
        message: String,
        /// How many calls were made.
        tries: u32,
    },
    /// The input or the answer is over the message size limit.
    #[error("func eval {image:?} failed: {message} (--max-grpc-message-size is {limit} bytes)")]
    TooLarge {
        /// The image.
        image: String,
        /// The status's message.
        message: String,
        /// The limit.
        limit: usize,
    },
    /// The runner answered with another error (the function failed).
    #[error("func eval {image:?} failed: {message}")]
    Failed {
        /// The image.
        image: String,
        /// The status's code and message.
        message: String,
    },
    /// The client's own thread is gone.
    #[error("the function runner client stopped")]
    Stopped,
}

/// What the runner answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluated {
    /// The output ResourceList.
    pub resource_list: String,
    /// The function's stderr.
    pub log: String,
}

struct Call {
    image: String,
    resource_list: String,
    reply: mpsc::SyncSender<Result<Evaluated, RunnerError>>,
}

/// A connection to a function runner (made on the first call, and again
/// after it is lost).
pub struct FunctionRunner {
    config: RunnerConfig,
    calls: tokio::sync::mpsc::UnboundedSender<Call>,
}

impl std::fmt::Debug for FunctionRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionRunner")
            .field("config", &self.config)
            .finish()
    }
}

impl FunctionRunner {
    /// A client of the runner at `config.address`. Nothing is connected
    /// until the first call.
    pub fn connect(config: RunnerConfig) -> Result<Self, RunnerError> {
        let uri = if config.address.contains("://") {
            config.address.clone()
        } else {
            format!("http://{}", config.address)
        };
        let refused = |message: String| RunnerError::Address {
            address: config.address.clone(),
            message,
        };
        if uri.starts_with("https://") {
            return Err(refused(
                "Porch's function runner speaks plaintext gRPC; use http:// or HOST:PORT".into(),
            ));
        }
        let endpoint = Endpoint::from_shared(uri)
            .map_err(|e| refused(e.to_string()))?
            .connect_timeout(Duration::from_secs(5))
            .timeout(config.timeout);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| refused(format!("starting the client: {e}")))?;
        let (calls, mut queue) = tokio::sync::mpsc::unbounded_channel::<Call>();
        let worker_config = config.clone();
        std::thread::Builder::new()
            .name("function-runner".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let channel = endpoint.connect_lazy();
                    while let Some(call) = queue.recv().await {
                        let channel = channel.clone();
                        let config = worker_config.clone();
                        tokio::spawn(async move {
                            let answer =
                                evaluate(channel, &config, &call.image, call.resource_list).await;
                            // The caller may have gone; nothing to tell.
                            let _ = call.reply.send(answer);
                        });
                    }
                });
            })
            .map_err(|e| refused(format!("starting the client: {e}")))?;
        Ok(FunctionRunner { config, calls })
    }

    /// The runner's address.
    pub fn address(&self) -> &str {
        &self.config.address
    }

    /// Runs `image` on `resource_list` in the runner.
    pub fn evaluate(&self, image: &str, resource_list: &str) -> Result<Evaluated, RunnerError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.calls
            .send(Call {
                image: image.to_string(),
                resource_list: resource_list.to_string(),
                reply,
            })
            .map_err(|_| RunnerError::Stopped)?;
        answer.recv().map_err(|_| RunnerError::Stopped)?
    }
}

/// One `EvaluateFunction` call, tried again while the runner is
/// unavailable.
async fn evaluate(
    channel: Channel,
    config: &RunnerConfig,
    image: &str,
    resource_list: String,
) -> Result<Evaluated, RunnerError> {
    let request = proto::EvaluateFunctionRequest {
        resource_list: resource_list.into_bytes(),
        image: image.to_string(),
        tag: String::new(),
    };
    // Refused before sending: past the limit, the client's encoder would
    // only break the HTTP/2 stream.
    let size = prost::Message::encoded_len(&request);
    if size > config.max_message {
        return Err(RunnerError::TooLarge {
            image: image.to_string(),
            message: format!("the ResourceList to send is {size} bytes"),
            limit: config.max_message,
        });
    }
    let mut tries = 0;
    loop {
        tries += 1;
        let mut client = tonic::client::Grpc::new(channel.clone())
            .max_decoding_message_size(config.max_message)
            .max_encoding_message_size(config.max_message);
        let status = match client.ready().await {
            Err(e) => tonic::Status::unavailable(e.to_string()),
            Ok(()) => {
                let mut call = tonic::Request::new(request.clone());
                call.set_timeout(config.timeout);
                let path =
                    tonic::codegen::http::uri::PathAndQuery::from_static(proto::EVALUATE_FUNCTION);
                let codec = tonic_prost::ProstCodec::<
                    proto::EvaluateFunctionRequest,
                    proto::EvaluateFunctionResponse,
                >::default();
                match client.unary(call, path, codec).await {
                    Ok(response) => {
                        let out = response.into_inner();
                        return Ok(Evaluated {
                            resource_list: String::from_utf8_lossy(&out.resource_list).into_owned(),
                            log: String::from_utf8_lossy(&out.log).into_owned(),
                        });
                    }
                    Err(status) => status,
                }
            }
        };
        tracing::debug!(image, code = ?status.code(), message = status.message(), tries, "function runner call failed");
        let address = config.address.clone();
        let image = image.to_string();
        match status.code() {
            tonic::Code::Unavailable | tonic::Code::Unknown
                if tries <= RETRIES && !is_timeout(&status) =>
            {
                tokio::time::sleep(Duration::from_millis(200 * u64::from(tries))).await;
            }
            _ if is_timeout(&status) => {
                return Err(RunnerError::Timeout {
                    image,
                    address,
                    seconds: config.timeout.as_secs(),
                })
            }
            tonic::Code::NotFound => return Err(RunnerError::NotFound { image, address }),
            tonic::Code::Unavailable | tonic::Code::Unknown => {
                return Err(RunnerError::Unavailable {
                    image,
                    address,
                    message: status.message().to_string(),
                    tries,
                })
            }
            tonic::Code::ResourceExhausted | tonic::Code::OutOfRange
                if status.message().contains("message") =>
            {
                return Err(RunnerError::TooLarge {
                    image,
                    message: status.message().to_string(),
                    limit: config.max_message,
                })
            }
            code => {
                return Err(RunnerError::Failed {
                    image,
                    message: format!("rpc error: code = {code:?} desc = {}", status.message()),
                })
            }
        }
    }
}

/// Whether a status is the call's deadline passing (the client's timeout
/// or the server's `DeadlineExceeded`).
fn is_timeout(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::DeadlineExceeded
        || (status.code() == tonic::Code::Cancelled && status.message().contains("Timeout"))
        || status.message().contains("timed out")
}
