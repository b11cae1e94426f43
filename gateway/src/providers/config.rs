//! Choosing a provider from environment variables.
//!
//! | variable | meaning |
//! |---|---|
//! | `TOLLGATE_PROVIDER` | `fake` (default) or `openai` |
//! | `PROVIDER_API_KEY`, else `OPENAI_API_KEY` | the key (required for `openai`) |
//! | `TOLLGATE_PROVIDER_BASE_URL`, else `OPENAI_BASE_URL` | API root, default `https://api.openai.com/v1` |
//! | `TOLLGATE_PROVIDER_TIMEOUT_SECS` | end-to-end call timeout in seconds, default 60 |
//!
//! An empty variable counts as unset. The lookup is a parameter
//! ([`ProviderConfig::from_lookup`]) so tests never touch the process environment. Replay
//! providers are not chosen here: they are built from a recording by whoever replays it.

use std::time::Duration;

use super::{
    ApiKey, DEFAULT_TIMEOUT, FakeProvider, OpenAiConfig, OpenAiProvider, Provider, ProviderError,
};

/// Selects the provider.
pub const PROVIDER_VAR: &str = "TOLLGATE_PROVIDER";
/// The API key, first choice.
pub const API_KEY_VAR: &str = "PROVIDER_API_KEY";
/// The API key, second choice (OpenAI's own name).
pub const OPENAI_API_KEY_VAR: &str = "OPENAI_API_KEY";
/// The API root, first choice.
pub const BASE_URL_VAR: &str = "TOLLGATE_PROVIDER_BASE_URL";
/// The API root, second choice (OpenAI's own name).
pub const OPENAI_BASE_URL_VAR: &str = "OPENAI_BASE_URL";
/// The call timeout in seconds.
pub const TIMEOUT_VAR: &str = "TOLLGATE_PROVIDER_TIMEOUT_SECS";
/// The API root when none is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Which provider to build, with its settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProviderConfig {
    /// [`FakeProvider`].
    #[default]
    Fake,
    /// [`OpenAiProvider`].
    OpenAi(OpenAiConfig),
}

impl ProviderConfig {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ProviderError> {
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (a variable's value, or `None` if unset).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, ProviderError> {
        let get = |name: &str| {
            lookup(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        let kind = get(PROVIDER_VAR).unwrap_or_else(|| "fake".to_owned());
        match kind.as_str() {
            "fake" => Ok(ProviderConfig::Fake),
            "openai" => {
                let key = get(API_KEY_VAR)
                    .or_else(|| get(OPENAI_API_KEY_VAR))
                    .ok_or(ProviderError::MissingApiKey)?;
                let base_url = get(BASE_URL_VAR)
                    .or_else(|| get(OPENAI_BASE_URL_VAR))
                    .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
                let timeout = match get(TIMEOUT_VAR) {
                    Some(text) => parse_timeout(&text)?,
                    None => DEFAULT_TIMEOUT,
                };
                Ok(ProviderConfig::OpenAi(OpenAiConfig {
                    base_url,
                    api_key: ApiKey::new(key),
                    timeout,
                }))
            }
            _ => Err(ProviderError::UnknownProvider { name: kind }),
        }
    }

    /// Builds the provider.
    pub fn build(self) -> Result<Box<dyn Provider>, ProviderError> {
        match self {
            ProviderConfig::Fake => Ok(Box::new(FakeProvider::new())),
            ProviderConfig::OpenAi(config) => Ok(Box::new(OpenAiProvider::new(config)?)),
        }
    }
}

/// The provider the process environment selects (see the [module docs](self)).
pub fn provider_from_env() -> Result<Box<dyn Provider>, ProviderError> {
    ProviderConfig::from_env()?.build()
}

/// The provider `lookup` selects; [`provider_from_env`] with an injectable environment.
pub fn provider_from_lookup(
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn Provider>, ProviderError> {
    ProviderConfig::from_lookup(lookup)?.build()
}

fn parse_timeout(text: &str) -> Result<Duration, ProviderError> {
    let invalid = || ProviderError::InvalidSetting {
        name: TIMEOUT_VAR.to_owned(),
        reason: format!("`{text}` is not a positive number of seconds"),
    };
    let seconds: f64 = text.parse().map_err(|_| invalid())?;
    if seconds <= 0.0 {
        return Err(invalid());
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| invalid())
}
