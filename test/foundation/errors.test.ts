import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { ApiError, notFound, requestCancelled, rpcError, toRestError } from "../../src/shared/errors.js";

// ConnectError's static Symbol.hasInstance accepts any ConnectError-shaped value, and a subclass
// inherits it: `instanceof ApiError` must still mean an ApiError, or a plain ConnectError's missing
// `status` reaches writeHead (a REST client that went away mid-query threw ERR_HTTP_INVALID_STATUS_CODE).
describe("ApiError and plain ConnectErrors", () => {
  it("instanceof ApiError holds for ApiErrors only", () => {
    assert.equal(notFound("thing") instanceof ApiError, true);
    assert.equal(notFound("thing") instanceof ConnectError, true);
    assert.equal(new ConnectError("x", Code.Canceled) instanceof ApiError, false);
    assert.equal(requestCancelled() instanceof ApiError, false);
    assert.equal(new Error("x") instanceof ApiError, false);
    assert.equal((null as unknown) instanceof ApiError, false);
  });

  it("a plain ConnectError answers over REST with the status of its code", () => {
    assert.deepEqual(toRestError(requestCancelled()).status, 499);
    assert.equal(toRestError(requestCancelled()).body.error.code, "canceled");
    assert.equal(toRestError(new ConnectError("gone", Code.Unavailable)).status, 503);
    assert.equal(toRestError(new ConnectError("x", Code.Internal)).status, 500);
    assert.equal(toRestError(notFound("thing")).status, 404);
  });

  it("rpcError keeps an ApiError's own code in ErrorInfo and names a plain one by its code", () => {
    assert.equal(rpcError(requestCancelled()).code, Code.Canceled);
    assert.equal(rpcError(notFound("thing")).code, Code.NotFound);
  });
});
