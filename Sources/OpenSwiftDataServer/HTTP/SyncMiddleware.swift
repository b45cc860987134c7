import Foundation
import HTTPTypes
import Hummingbird
import Logging
import OpenSwiftDataSyncProtocol

/// Around every sync request: turns every error into an `ErrorResponse` JSON answer, adds
/// the request id (`x-request-id`), logs one structured line, and counts the request. A `503`
/// answer (the storage cannot serve) gets a `Retry-After` header of `retryAfter` seconds.
struct SyncMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics
    var retryAfter = 5

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as SyncServiceError {
            response = JSONBody.response(ErrorResponse(error: error.error), status: error.status)
        } catch let error as HTTPError {
            let mapped = SyncServiceError.from(httpStatus: error.status, message: error.body)
            response = JSONBody.response(ErrorResponse(error: mapped.error), status: mapped.status)
        } catch let error as any HTTPResponseError {
            let mapped = SyncServiceError.from(httpStatus: error.status, message: nil)
            response = JSONBody.response(ErrorResponse(error: mapped.error), status: mapped.status)
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(error)"])
            let mapped = SyncServiceError(500, .internalError, "the server failed; the request may be retried")
            response = JSONBody.response(ErrorResponse(error: mapped.error), status: mapped.status)
        }
        if let name = HTTPField.Name("x-request-id") { response.headers[name] = context.id }
        if response.status == .serviceUnavailable, response.headers[.retryAfter] == nil { response.headers[.retryAfter] = "\(retryAfter)" }
        let elapsed = ContinuousClock.now - start
        let route = context.endpointPath ?? "unmatched"
        metrics.request(route: route, method: request.method.rawValue, status: response.status.code)
        context.logger.info(
            "request",
            metadata: [
                "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "route": "\(route)",
                "status": "\(response.status.code)",
                "ms": "\(Double(elapsed.components.attoseconds / 1_000_000_000_000) / 1000 + Double(elapsed.components.seconds) * 1000)",
            ])
        return response
    }
}
