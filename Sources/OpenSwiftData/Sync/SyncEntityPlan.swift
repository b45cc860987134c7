import Foundation
import OpenSwiftDataSyncProtocol

/// How one synced entity is captured, settled once when capture is enabled: which columns sync
/// (with their kinds, and the target entity of references), which attribute is the record id,
/// which many-to-many relationships are captured as links, and the scope rule.
final class SyncEntityPlan: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; `layout` is Sendable, `scope` a @Sendable
    // closure, the rest values.
    let layout: EntityLayout
    let scope: (@Sendable (any PersistentModel) -> String?)?
    /// The column index of the unique attribute that is the record id, if any.
    let recordIDColumn: Int?
    let recordIDKind: SyncValueKind
    /// The synced columns, in column order: their column index, name, kind, and for references
    /// the target entity.
    let fieldColumns: [Int]
    let fieldNames: [String]
    let fieldKinds: [SyncValueKind]
    let fieldTargets: [String?]
    /// The fields' kinds as the log blob codes them (`SyncLogCoding`).
    let fieldKindCodes: [UInt8]
    /// Whether any field is a reference (whose value the log rewrites as a record id).
    let hasReferences: Bool
    /// Whether a save may come back to an inserted row's change (a foreign key set once its
    /// target exists, links written after the rows): only then does the capture index the
    /// change by model.
    var revisitsInsertions: Bool { hasReferences || !links.isEmpty }
    /// For each column, its position in `fieldColumns` (nil: the column does not sync).
    let fieldOfColumn: [Int?]
    /// The many-to-many relationships whose join table this entity writes and whose destination
    /// syncs.
    let links: [PropertyLayout]
    /// The columns of the fields declared `.counter`, ascending: a save logs their difference.
    let counterColumns: [Int]
    /// The columns of the fields declared `.set`, ascending: a save logs the elements it added
    /// and removed.
    let setColumns: [Int]
    /// The columns of the fields declared `.text`, ascending: a save logs the runs it inserted
    /// and the ranges it deleted, by identity (see ``SyncTexts``).
    let textColumns: [Int]
    /// The columns of every merged field (counters and sets), ascending.
    let mergedColumns: [Int]

    /// Validates an entity's identity and its merged fields (`merges`, by property name), and
    /// builds its plan; `synced` names every synced entity (references to others are not
    /// captured). With `lenient` (a store reopened), a merged field that no longer fits is
    /// written whole instead of refused.
    init(
        layout: EntityLayout, scope: (@Sendable (any PersistentModel) -> String?)?, synced: Set<String>, merges: [String: MergeKind] = [:],
        lenient: Bool = false
    ) throws {
        self.layout = layout
        self.scope = scope
        let constraints = layout.uniquenessConstraints
        if constraints.count > 1 {
            throw SyncCaptureError.unsupportedIdentity(entity: layout.name, reason: "it has \(constraints.count) uniqueness constraints")
        }
        if let constraint = constraints.first {
            guard constraint.count == 1, let column = layout.properties[constraint[0]].columnIndex else {
                throw SyncCaptureError.unsupportedIdentity(entity: layout.name, reason: "its #Unique constraint spans \(constraint.count) properties")
            }
            guard let kind = SyncValueKind(codec: layout.columns[column].codec), kind != .reference, kind != .json else {
                throw SyncCaptureError.unsupportedIdentity(
                    entity: layout.name, reason: "its unique attribute \(layout.columns[column].name) has no canonical text form")
            }
            recordIDColumn = column
            recordIDKind = kind
        } else {
            recordIDColumn = nil
            recordIDKind = .string
        }
        var columns: [Int] = []
        var names: [String] = []
        var kinds: [SyncValueKind] = []
        var targets: [String?] = []
        var fieldOfColumn: [Int?] = Array(repeating: nil, count: layout.columns.count)
        for (index, property) in layout.columns.enumerated() {
            guard let kind = SyncValueKind(codec: property.codec) else { continue }
            let target = property.relationship?.destinationName
            if let target, !synced.contains(target) { continue }
            fieldOfColumn[index] = columns.count
            columns.append(index)
            names.append(property.syncName)
            kinds.append(kind)
            targets.append(target)
        }
        var seen: [String: String] = [:]
        for (position, name) in names.enumerated() {
            let property = layout.columns[columns[position]].name
            if let other = seen[name] {
                throw SyncCaptureError.duplicateSyncName(entity: layout.name, name: name, properties: [other, property])
            }
            seen[name] = property
        }
        fieldColumns = columns
        fieldNames = names
        fieldKinds = kinds
        fieldTargets = targets
        fieldKindCodes = kinds.map(SyncLogCoding.Encoder.code(of:))
        hasReferences = targets.contains { $0 != nil }
        self.fieldOfColumn = fieldOfColumn
        links = layout.relationships.filter { property in
            guard case let .joinTable(_, _, writes)? = property.relationship?.storage, writes,
                let destination = property.relationship?.destinationName
            else { return false }
            return synced.contains(destination)
        }
        var counters: [Int] = []
        var sets: [Int] = []
        var texts: [Int] = []
        for (property, kind) in merges.sorted(by: { $0.key < $1.key }) {
            do {
                let column = try Self.mergedColumn(
                    property, kind: kind, layout: layout, recordIDColumn: recordIDColumn, fieldOfColumn: fieldOfColumn, kinds: kinds)
                switch kind {
                case .set: sets.append(column)
                case .counter: counters.append(column)
                case .text: texts.append(column)
                }
            } catch  where lenient {
                continue
            }
        }
        counterColumns = counters.sorted()
        setColumns = sets.sorted()
        textColumns = texts.sorted()
        mergedColumns = (counters + sets + texts).sorted()
    }

    /// The column of a merged field, checked: a synced, non-optional stored attribute other than
    /// the record id, whose type fits `kind`. Counters and sets merge in this version.
    private static func mergedColumn(
        _ property: String, kind: MergeKind, layout: EntityLayout, recordIDColumn: Int?, fieldOfColumn: [Int?], kinds: [SyncValueKind]
    ) throws -> Int {
        func mismatch(_ reason: String) -> SyncCaptureError {
            SyncCaptureError.mergeKindMismatch(entity: layout.name, property: property, kind: kind, reason: reason)
        }
        guard let column = layout.columns.firstIndex(where: { $0.name == property }) else {
            throw mismatch("\(layout.name) has no stored attribute \(property)")
        }
        let attribute = layout.columns[column]
        guard attribute.relationship == nil, let field = fieldOfColumn[column] else { throw mismatch("it is not a synced attribute") }
        guard column != recordIDColumn else { throw mismatch("it is the record's unique id") }
        guard !attribute.codec.isOptional else { throw mismatch("it is optional, and nil has no merge; make it non-optional with a default") }
        let valueType = type(of: attribute.keyPath).valueType
        switch kind {
        case .counter:
            guard kinds[field] == .int || kinds[field] == .double, CounterBridge.isCounterType(valueType) else {
                throw mismatch("a counter is an Int, Int64 or Double, not \(valueType)")
            }
        case .set:
            guard kinds[field] == .json, SetBridge.isSetType(valueType) else {
                throw mismatch("a set is an array or a Set of Codable, Hashable elements, not \(valueType)")
            }
        case .text:
            guard kinds[field] == .string, valueType == String.self else { throw mismatch("text merges a String, not \(valueType)") }
        }
        return column
    }

    /// Refuses a synced to-one relationship that several collections of its (synced)
    /// destination share as their inverse with different delete rules. The collections
    /// themselves sync as links, each with its own members; the reference carries one delete
    /// rule, which the server applies to it whichever collection holds the model.
    static func checkSharedInverses(of layout: EntityLayout, container: ModelContainer, synced: Set<String>) throws {
        for property in layout.relationships {
            guard let relationship = property.relationship, !relationship.sharingCollections.isEmpty, synced.contains(relationship.destinationName),
                let destination = container.layout(named: relationship.destinationName)
            else { continue }
            let collections = relationship.sharingCollections.filter { $0 < destination.properties.count }.map { destination.properties[$0] }
            let rules = collections.compactMap { $0.relationship?.deleteRule }
            if let first = rules.first, rules.contains(where: { $0 != first }) {
                throw SyncCaptureError.sharedInverseDeleteRules(
                    entity: layout.name, property: property.name, collections: collections.map { "\(destination.name).\($0.name)" })
            }
        }
    }

    /// The synced property named `name`: a column field or a link relationship.
    func property(named name: String) -> PropertyLayout? {
        layout.properties.first { $0.name == name }
    }
}
