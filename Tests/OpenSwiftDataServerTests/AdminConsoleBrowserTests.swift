import Foundation
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol
import Testing

/// A page of the browser, attached to through the DevTools connection.
private struct BrowserPage {
    let devTools: DevToolsConnection
    let session: String

    /// Opens a new page, with every request sent with `headers`.
    static func open(_ devTools: DevToolsConnection, headers: [String: String]) async throws -> BrowserPage {
        let target = try await devTools.send("Target.createTarget", ["url": "about:blank"])
        let targetID = try #require(target["targetId"]?.string)
        let attached = try await devTools.send("Target.attachToTarget", ["targetId": .string(targetID), "flatten": true])
        let page = BrowserPage(devTools: devTools, session: try #require(attached["sessionId"]?.string))
        for domain in ["Page", "Runtime", "Log", "Network"] { try await page.send("\(domain).enable") }
        try await page.send("Network.setExtraHTTPHeaders", ["headers": .object(headers.mapValues { .string($0) })])
        return page
    }

    @discardableResult
    func send(_ method: String, _ params: JSONValue = [:]) async throws -> JSONValue {
        try await devTools.send(method, params, session: session)
    }

    /// Loads `url` and waits for its load event.
    func navigate(_ url: String) async throws {
        let mark = await devTools.events.count
        let answer = try await send("Page.navigate", ["url": .string(url)])
        if let error = answer["errorText"]?.string { throw DevToolsConnection.Failure(description: "navigating to \(url): \(error)") }
        try await devTools.waitForEvent("Page.loadEventFired", session: session, after: mark)
    }

    /// A JavaScript string literal of `text`.
    static func literal(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    /// The value of a JavaScript expression (awaited if it is a promise).
    func evaluate(_ expression: String, within seconds: Double = 60) async throws -> JSONValue {
        let answer = try await devTools.send(
            "Runtime.evaluate", ["expression": .string(expression), "returnByValue": true, "awaitPromise": true], session: session, within: seconds)
        if let exception = answer["exceptionDetails"] {
            throw DevToolsConnection.Failure(description: "\(expression) threw: \(exception["exception"]?["description"]?.string ?? "\(exception)")")
        }
        return answer["result"]?["value"] ?? .null
    }

    /// The text of an element.
    func text(_ id: String) async throws -> String {
        try await evaluate("document.getElementById('\(id)').textContent").string ?? ""
    }

    /// Waits until `condition` (a JavaScript expression) is true, checking it in the page every
    /// 20 ms by the page's clock (so a busy test process does not slow the checks down).
    func waitUntil(_ condition: String, within seconds: Double) async throws {
        let script = """
            new Promise((done, fail) => {
              const start = Date.now();
              const check = () => {
                let met = false;
                try { met = Boolean(\(condition)); } catch (error) { met = false; }
                if (met) done(true);
                else if (Date.now() - start > \(Int(seconds * 1000))) fail(new Error("not within \(seconds) s: " + \(Self.literal(condition))));
                else setTimeout(check, 20);
              };
              check();
            })
            """
        _ = try await evaluate(script, within: seconds + 60)
    }

    /// Lays the page out as a screen of `width` × `height` CSS pixels.
    func emulate(width: Int, height: Int, scale: Int, mobile: Bool) async throws {
        try await send(
            "Emulation.setDeviceMetricsOverride",
            [
                "width": .number(Double(width)), "height": .number(Double(height)), "deviceScaleFactor": .number(Double(scale)),
                "mobile": .bool(mobile),
            ])
        // The new layout, computed now.
        _ = try await evaluate("document.documentElement.getBoundingClientRect().width")
    }

    /// A PNG of the whole page, as wide as the screen.
    func screenshot() async throws -> Data {
        let metrics = try await send("Page.getLayoutMetrics")
        let width = try #require(metrics["cssLayoutViewport"]?["clientWidth"]?.number)
        let height = try #require(metrics["cssContentSize"]?["height"]?.number)
        let shot = try await send(
            "Page.captureScreenshot",
            [
                "format": "png", "captureBeyondViewport": true,
                "clip": ["x": 0, "y": 0, "width": .number(width), "height": .number(height), "scale": 1],
            ])
        return try #require(shot["data"]?.string.flatMap { Data(base64Encoded: $0) })
    }
}

/// The width of a PNG, from its header.
private func pngWidth(_ data: Data) -> Int? {
    let bytes = [UInt8](data.prefix(24))
    guard bytes.count == 24, bytes[0..<8] == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] else { return nil }
    return bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
}

/// Where CI keeps the screenshots: `ci-artifacts/console/` at the repository's root.
private let artifacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("ci-artifacts/console", isDirectory: true)

@Suite("Admin console in a headless browser", .serialized)
struct AdminConsoleBrowserTests {
    @Test(
        "the page loads, shows a client's push at its next read of the state (every second), and a grant confirmed on it lets the grantee pull the scope",
        .enabled(if: Chromium.executable != nil || Chromium.required, "\(Chromium.absence)"))
    func consoleInChromium() async throws {
        guard Chromium.executable != nil else {
            Issue.record("OSD_TEST_REQUIRE_CHROMIUM=1 but \(Chromium.absence)")
            return
        }
        try await LiveServer.run(adminToken: AdminFixture.token) { server in
            let alice = try await server.token("alice")
            let bob = try await server.token("bob")
            let first = try await server.push(
                PushRequest(
                    clientID: "alice-laptop", mutations: [mutation(1, .insert, "t1", scope: "team:design", fields: ["title": .string("plan")])]),
                token: alice)
            #expect(try first.decode(PushResponse.self).results.first?.status == .applied)

            let browser = try await Chromium.launch()
            let devTools: DevToolsConnection
            do {
                devTools = try await DevToolsConnection.connect(url: browser.webSocketURL)
            } catch {
                await browser.close()
                throw error
            }
            do {
                let page = try await BrowserPage.open(devTools, headers: ["Authorization": "Bearer \(AdminFixture.token)"])
                try await page.emulate(width: 1280, height: 800, scale: 1, mobile: false)
                try await page.navigate("\(server.base)/admin")
                #expect(try await page.evaluate("document.title").string == "osd-server admin")
                #expect(try await page.text("scopes").contains("team:design"))
                // The script runs (the content security policy lets it) and reads the state.
                try await page.waitUntil("document.getElementById('status').textContent.startsWith('live')", within: 30)

                // A push by another client shows at the page's next read of the state, with no
                // reload (the page reads it every second; how late a timer fires on a busy machine
                // is not this test's business, so only the read after the push is awaited).
                let pushed = try await server.push(
                    PushRequest(clientID: "alice-phone", mutations: [mutation(1, .insert, "n1", scope: .user("alice"))]), token: alice)
                #expect(pushed.status == 200)
                let afterPush = try #require(try await page.evaluate("Date.now()").number)
                try await page.waitUntil("Number(document.body.dataset.readAt) >= \(afterPush)", within: 30)
                #expect(try await page.text("clients").contains("alice-phone"))
                #expect(try await page.text("push-total") == "2 in all")

                // A grant, confirmed on the page, lets bob pull the scope; nothing happens before the confirmation.
                #expect(try await AdminFixture.records(server, token: bob, client: "bob-before").isEmpty)
                _ = try await page.evaluate(
                    """
                    document.getElementById('grant-scope').value = 'team:design';
                    document.getElementById('grant-user').value = 'bob';
                    document.getElementById('grant-button').click();
                    true
                    """)
                #expect(try await page.evaluate("document.getElementById('confirm').hidden").bool == false)
                let question = try await page.text("confirm-text")
                #expect(question.contains("team:design") && question.contains("bob"), "\(question)")
                #expect(try await AdminFixture.records(server, token: bob, client: "bob-unconfirmed").isEmpty)
                _ = try await page.evaluate("document.getElementById('confirm-yes').click(); true")
                try await page.waitUntil("document.getElementById('result').textContent.startsWith('Granted')", within: 30)
                #expect(try await AdminFixture.records(server, token: bob, client: "bob-after") == ["t1"])
                try await page.waitUntil("document.getElementById('scopes').textContent.includes('bob')", within: 30)

                try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
                let laptop = try await page.screenshot()
                #expect(pngWidth(laptop) == 1280)
                try laptop.write(to: artifacts.appendingPathComponent("admin-laptop.png"))
                try await page.emulate(width: 390, height: 844, scale: 2, mobile: true)
                #expect(
                    try await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth").bool == true,
                    "the page is wider than a phone")
                let phone = try await page.screenshot()
                #expect(pngWidth(phone) == 780)
                try phone.write(to: artifacts.appendingPathComponent("admin-phone.png"))

                // Nothing failed in the page: no exception, no refused script or style, no error logged.
                let problems = await devTools.events.filter { event in
                    event.method == "Runtime.exceptionThrown"
                        || (event.method == "Runtime.consoleAPICalled" && event.params["type"]?.string == "error")
                        || (event.method == "Log.entryAdded" && event.params["entry"]?["level"]?.string == "error")
                }
                #expect(problems.isEmpty, "\(problems.map { "\($0.method) \($0.params)" })")
            } catch {
                Issue.record("chromium's output: \(browser.output)")
                await devTools.close()
                await browser.close()
                throw error
            }
            await devTools.close()
            await browser.close()
        }
    }
}
