import Foundation
import HTTPTypes
import Hummingbird
import OpenSwiftDataSyncProtocol

/// The admin console's routes, behind ``AdminGuard``:
///
/// - `GET /admin`: the page (HTML, with the state rendered in it and a small inline script
///   that reads the state again every second);
/// - `GET /admin/api/state`: the state (JSON, ``AdminState``);
/// - `POST /admin/api/grant`, `POST /admin/api/revoke`, `POST /admin/api/rotate-epoch`: the
///   operator's actions (JSON bodies, ``AdminGrantRequest``, ``AdminRevokeRequest``,
///   ``AdminRotationRequest``).
struct AdminRoutes: Sendable {
    let console: AdminConsole
    let credential: AdminCredential

    /// The largest action body accepted, in bytes.
    static let maxBodySize = 64 * 1024

    func add<Context: RequestContext>(to routes: RouteCollection<Context>) {
        let console = console
        routes.add(middleware: AdminGuard<Context>(credential: credential))
        routes.get("/admin") { request, _ in
            let state = try await console.state()
            return AdminPage.response(state, path: request.uri.path)
        }
        routes.get("/admin/api/state") { _, _ in JSONBody.response(try await console.state()) }
        routes.post("/admin/api/grant") { request, _ in
            JSONBody.response(try await console.grant(try await Self.decode(AdminGrantRequest.self, request)))
        }
        routes.post("/admin/api/revoke") { request, _ in
            JSONBody.response(try await console.revoke(try await Self.decode(AdminRevokeRequest.self, request)))
        }
        routes.post("/admin/api/rotate-epoch") { request, _ in
            JSONBody.response(try await console.rotateEpoch(try await Self.decode(AdminRotationRequest.self, request)))
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        var request = request
        let body = try await request.collectBody(upTo: maxBodySize)
        do {
            return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
        } catch {
            throw SyncServiceError(400, .malformedRequest, "the body is not the action's JSON: \(JSONBody.describe(error))")
        }
    }
}

/// In front of the admin routes: refuses a request without the admin credential with `401`
/// (the protocol's JSON error, and `WWW-Authenticate: Basic` so that a browser asks for it),
/// refuses an action that a page of another site could have sent, and marks every answer as
/// not to be stored, sniffed or framed.
///
/// An action must carry the header `X-OSD-Admin: 1` and a JSON body (`Content-Type:
/// application/json`), which a form of another site cannot send and a script of another site
/// cannot send without a CORS preflight that the server does not answer (so the console must
/// not be mounted behind a CORS middleware that allows credentials); a browser's
/// `Sec-Fetch-Site`, when it sends one, must say the request comes from the page itself, and an
/// `Origin`, when present, must name the request's own host.
struct AdminGuard<Context: RequestContext>: RouterMiddleware {
    let credential: AdminCredential

    /// The header every action carries, which only a page of the console's own origin can
    /// send.
    static var actionHeader: String { "x-osd-admin" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard credential.accepts(authorization: request.headers[.authorization]) else {
            let refusal = SyncServiceError(
                401, .unauthorized, "the admin console needs the admin token: Authorization: Bearer <token>, or Basic with the token as password")
            var response = JSONBody.response(ErrorResponse(error: refusal.error), status: refusal.status)
            response.headers[.wwwAuthenticate] = #"Basic realm="osd-server admin", charset="UTF-8""#
            return response
        }
        if request.method == .post {
            guard let marker = HTTPField.Name(Self.actionHeader), request.headers[marker] == "1" else {
                throw SyncServiceError.forbidden("an admin action must come from the admin page, which sends \(Self.actionHeader): 1")
            }
            if let origin = request.headers[.origin], let host = request.head.authority,
                URLComponents(string: origin).map({ components in
                    let port = components.port.map { ":\($0)" } ?? ""
                    return (components.host ?? "") + port != host
                }) ?? true
            {
                throw SyncServiceError.forbidden("an admin action must come from the admin page's own origin, not \(origin)")
            }
            guard let type = request.headers[.contentType]?.lowercased(), type.hasPrefix("application/json") else {
                throw SyncServiceError(415, .malformedRequest, "an admin action takes a JSON body: send Content-Type: application/json")
            }
            if let name = HTTPField.Name("sec-fetch-site"), let site = request.headers[name]?.lowercased(), site != "same-origin", site != "none" {
                throw SyncServiceError.forbidden("an admin action must come from the admin page itself (Sec-Fetch-Site: \(site))")
            }
        }
        var response = try await next(request, context)
        response.headers[.cacheControl] = "no-store"
        response.headers[.xContentTypeOptions] = "nosniff"
        if let name = HTTPField.Name("referrer-policy") { response.headers[name] = "no-referrer" }
        if let name = HTTPField.Name("x-frame-options") { response.headers[name] = "DENY" }
        return response
    }
}
