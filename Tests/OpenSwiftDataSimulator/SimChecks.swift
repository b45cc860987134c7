import Crypto
import Foundation
import GRDB
import OpenSwiftData
import OpenSwiftDataServer
import OpenSwiftDataSyncProtocol

/// The state a replica shows, as sorted lines `entity|recordID|field=value …`: what the
/// convergence check compares between a client and the server's view for its user.
enum SimState {
    /// The fields compared, by entity (the unique `key` is the record id itself).
    static let fields: [String: [String]] = [
        "SimList": ["name", "space"],
        "SimItem": ["title", "count", "done", "space", "list"],
        "SimTag": ["label", "space"],
        "SimCounter": ["value", "space"],
        "SimTally": ["hits", "space"],
        "SimRoster": ["members", "space"],
        "SimNote": ["body", "space"],
        "SimPhoto": ["image", "space"],
        "SimMark": ["client"],
    ]

    static func render(_ value: SyncValue?) -> String {
        switch value {
        case nil, .null?: return "nil"
        case let .string(text)?: return "\"\(text)\""
        case let .int(number)?: return "\(number)"
        case let .bool(flag)?: return "\(flag)"
        case let .double(number)?: return "\(number)"
        case let .reference(id)?: return "→\(id)"
        case let .json(text)?: return text
        case let other?: return "\(other)"
        }
    }

    static func line(entity: String, id: String, fields: [String: String], links: [String]) -> String {
        let names = Self.fields[entity] ?? []
        let values = names.map { "\($0)=\(fields[$0] ?? "nil")" }.joined(separator: " ")
        return "\(entity)|\(id)|\(values)|tags=\(links.sorted().joined(separator: ","))"
    }

    /// An attachment's bytes as the server shows its blob (its SHA-256 and size); "nil" when the
    /// bytes are absent, as they are until they have arrived.
    static func image(_ data: Data?) -> String {
        guard let data, let blob = BlobReference(digest: digest(data), size: Int64(data.count)) else { return "nil" }
        return render(.blob(blob))
    }

    /// The SHA-256 of `data` in lowercase hexadecimal.
    static func digest(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    /// A roster's members as the server's JSON array of them.
    static func members(_ members: [String]) -> String {
        "[" + members.map { "\"\($0)\"" }.joined(separator: ",") + "]"
    }

    /// A client's visible records (references to records it does not hold are left out, as
    /// unresolved).
    static func client(_ client: SimClient) throws -> [String] {
        var lines: [String] = []
        let lists = try client.fetch(SimList.self)
        let items = try client.fetch(SimItem.self)
        let tags = try client.fetch(SimTag.self)
        let visible = Set(lists.map(\.key) + items.map(\.key) + tags.map(\.key))
        func text(_ value: String?) -> String { value.map { "\"\($0)\"" } ?? "nil" }
        for list in lists {
            lines.append(line(entity: "SimList", id: list.key, fields: ["name": text(list.name), "space": text(list.space)], links: []))
        }
        for item in items {
            let list = item.list.flatMap { visible.contains($0.key) ? "→\($0.key)" : nil } ?? "nil"
            lines.append(
                line(
                    entity: "SimItem", id: item.key,
                    fields: ["title": text(item.title), "count": "\(item.count)", "done": "\(item.done)", "space": text(item.space), "list": list],
                    links: item.tags.map(\.key).filter { visible.contains($0) }))
        }
        for tag in tags {
            lines.append(line(entity: "SimTag", id: tag.key, fields: ["label": text(tag.label), "space": text(tag.space)], links: []))
        }
        for counter in try client.fetch(SimCounter.self) {
            lines.append(line(entity: "SimCounter", id: counter.key, fields: ["value": "\(counter.value)", "space": text(counter.space)], links: []))
        }
        for tally in try client.fetch(SimTally.self) {
            lines.append(line(entity: "SimTally", id: tally.key, fields: ["hits": "\(tally.hits)", "space": text(tally.space)], links: []))
        }
        for roster in try client.fetch(SimRoster.self) {
            lines.append(
                line(entity: "SimRoster", id: roster.key, fields: ["members": members(roster.members), "space": text(roster.space)], links: []))
        }
        for note in try client.fetch(SimNote.self) {
            lines.append(line(entity: "SimNote", id: note.key, fields: ["body": text(note.body), "space": text(note.space)], links: []))
        }
        for photo in try client.fetch(SimPhoto.self) {
            lines.append(line(entity: "SimPhoto", id: photo.key, fields: ["image": image(photo.image), "space": text(photo.space)], links: []))
        }
        for mark in try client.fetch(SimMark.self) {
            lines.append(line(entity: "SimMark", id: mark.key, fields: ["client": text(mark.client)], links: []))
        }
        return lines.sorted()
    }

    /// The server's records a user may read, through a fresh pull (a snapshot of every granted
    /// scope), with the scope of each.
    static func server(
        _ service: SyncService, user: String, probe: String
    ) async throws -> (lines: [String], records: [String: (scope: String, fields: [String: SyncValue], links: [String: Set<String>])]) {
        var records = try await replay(service, user: user, probe: probe, version: .plainFields)
        // Blobs as a reader of version 4 sees them (version 1 reads them as nil); the rest as
        // version 1 does (version 3 sends a text's edits, not its value).
        for (id, record) in try await replay(service, user: user, probe: probe + "-blobs", version: .blobs) where record.entity == "SimPhoto" {
            records[id]?.fields["image"] = record.fields["image"]
        }
        let visible = Set(records.keys)
        var lines: [String] = []
        for (id, record) in records {
            var fields: [String: String] = [:]
            for (name, value) in record.fields {
                if case let .reference(target) = value, !visible.contains(target) { continue }
                fields[name] = render(value)
            }
            let links = record.links.values.flatMap { $0 }.filter { visible.contains($0) }
            lines.append(line(entity: record.entity, id: id, fields: fields, links: record.entity == "SimItem" ? links : []))
        }
        return (lines.sorted(), records.mapValues { ($0.scope, $0.fields, $0.links) })
    }

    /// The server's records a user may read, replayed from a fresh pull in protocol `version`.
    private static func replay(
        _ service: SyncService, user: String, probe: String, version: ProtocolVersion
    ) async throws -> [String: (entity: String, scope: String, fields: [String: SyncValue], links: [String: Set<String>])] {
        var records: [String: (entity: String, scope: String, fields: [String: SyncValue], links: [String: Set<String>])] = [:]
        var cursor: String?
        for _ in 0..<10_000 {
            let page = try await service.pull(
                user: user, request: PullRequest(protocolVersion: version, clientID: probe, cursor: cursor, limit: 1000))
            for change in page.changes {
                let key = change.recordID
                switch change.op {
                case .insert:
                    records[key] = (change.entity, change.scope.rawValue, change.fields, change.links.mapValues { Set($0.added) })
                case .update:
                    var record = records[key] ?? (change.entity, change.scope.rawValue, [:], [:])
                    record.scope = change.scope.rawValue
                    for (name, value) in change.fields { record.fields[name] = value }
                    for (name, link) in change.links {
                        record.links[name, default: []].formUnion(link.added)
                        record.links[name, default: []].subtract(link.removed)
                    }
                    records[key] = record
                case .delete:
                    records[key] = nil
                }
            }
            cursor = page.cursor
            if !page.hasMore { break }
        }
        return records
    }

    /// Mutations applied more than once, and clients whose mutations were applied out of order,
    /// from the server's change log.
    static func applications(_ server: SimServer) throws -> [String] {
        try server.read { db in
            var problems: [String] = []
            let twice = try Row.fetchAll(
                db,
                sql: """
                    SELECT client_id, mutation_id, COUNT(DISTINCT txn) FROM osd_changes
                    WHERE mutation_id IS NOT NULL GROUP BY client_id, mutation_id HAVING COUNT(DISTINCT txn) > 1
                    """)
            for row in twice {
                problems.append("mutation \(row[0] as String? ?? "?")#\(row[1] as Int64? ?? 0) applied \(row[2] as Int? ?? 0) times")
            }
            let order = try Row.fetchAll(db, sql: "SELECT client_id, mutation_id FROM osd_changes WHERE mutation_id IS NOT NULL ORDER BY seq")
            var last: [String: Int64] = [:]
            for row in order {
                guard let client: String = row[0], let id: Int64 = row[1] else { continue }
                if let previous = last[client], id < previous {
                    problems.append("client \(client): mutation \(id) applied after \(previous)")
                }
                last[client] = id
            }
            return problems
        }
    }
}
