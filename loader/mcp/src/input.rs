//! The client's input stream, watched for its end: the MCP server learns that the client closed
//! its input (stdin) the moment it reads the end, so that it cancels the calls still running
//! at once, instead of after `rmcp` has waited for them to answer a client that is gone.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

use xcsh_loader_core::CancelToken;

/// `inner`, firing `closed` when a read finds its end (or fails).
pub(super) struct Watched<R> {
    inner: R,
    closed: CancelToken,
}

impl<R> Watched<R> {
    pub(super) fn new(inner: R, closed: CancelToken) -> Self {
        Self { inner, closed }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let room = buf.remaining() > 0;
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &polled {
            // Nothing read into room for something: the end of the stream.
            Poll::Ready(Ok(())) if room && buf.filled().len() == before => self.closed.cancel(),
            Poll::Ready(Err(_)) => self.closed.cancel(),
            _ => {}
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn the_end_of_the_stream_fires_closed_and_data_does_not() {
        let closed = CancelToken::new();
        let mut input = Watched::new(&b"{}\n"[..], closed.clone());
        let mut line = [0_u8; 3];
        assert!(input.read_exact(&mut line).await.is_ok());
        assert!(!closed.is_cancelled());
        assert_eq!(input.read(&mut line).await.ok(), Some(0));
        assert!(closed.is_cancelled());
    }
}
