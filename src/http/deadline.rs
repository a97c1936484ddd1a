//! Slow clients: a request body must arrive within `server.body_timeout_secs` of the
//! request's start, or the request is answered `408` and its connection closed. (The
//! head has `server.header_timeout_secs`, enforced by actix itself.) Without it, a
//! client that declares a larger `Content-Length` than it sends holds its connection
//! and the handler waiting on it for as long as it likes.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::rt::time::{sleep, Sleep};
use actix_web::web::Bytes;
use actix_web::{HttpMessage, ResponseError};
use futures_core::Stream;

use crate::error::ApiError;

/// How long a body may take, as app data for the middleware.
#[derive(Debug, Clone, Copy)]
pub struct BodyTimeout(pub Duration);

/// A request body that ends with an error when its time is up.
struct Timed {
    inner: Payload,
    deadline: Pin<Box<Sleep>>,
    fired: Arc<AtomicBool>,
    done: bool,
}

impl Stream for Timed {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            self.done = true;
            self.fired.store(true, Ordering::SeqCst);
            return Poll::Ready(Some(Err(PayloadError::Io(io::Error::new(
                io::ErrorKind::TimedOut,
                "the request body did not arrive in time",
            )))));
        }
        let item = Pin::new(&mut self.inner).poll_next(cx);
        if let Poll::Ready(None) = item {
            self.done = true;
        }
        item
    }
}

/// The middleware: times the body of every request that has one.
pub async fn body_deadline(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let has_body = req.headers().contains_key(header::CONTENT_LENGTH)
        || req.headers().contains_key(header::TRANSFER_ENCODING);
    let timeout = req.app_data::<BodyTimeout>().map(|t| t.0);
    let fired = Arc::new(AtomicBool::new(false));
    if let (true, Some(timeout)) = (has_body, timeout) {
        let timed = Timed {
            inner: req.take_payload(),
            deadline: Box::pin(sleep(timeout)),
            fired: fired.clone(),
            done: false,
        };
        req.set_payload(Payload::Stream {
            payload: Box::pin(timed),
        });
    }
    let res = next.call(req).await?.map_into_boxed_body();
    if !fired.load(Ordering::SeqCst) {
        return Ok(res);
    }
    let error = ApiError::RequestTimeout(format!(
        "the request body did not arrive within {} s (server.body_timeout_secs)",
        timeout.map_or(0, |t| t.as_secs())
    ));
    let mut response = error.error_response();
    response
        .head_mut()
        .set_connection_type(actix_web::http::ConnectionType::Close);
    Ok(ServiceResponse::new(res.request().clone(), response))
}
