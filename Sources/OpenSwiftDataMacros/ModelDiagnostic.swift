import SwiftDiagnostics

/// Every diagnostic the model macros emit, with a stable identifier per case.
enum ModelDiagnostic: String, DiagnosticMessage {
    case notAClass
    case genericClass
    case missingInitializer
    case letWithInitialValue
    case propertyObservers
    case unstorableType
    case transientWithoutDefault
    case implicitMemberDefaultWithoutType
    case nonModelSuperclass

    var message: String {
        switch self {
        case .notAClass:
            return "@Model can only be applied to a class"
        case .genericClass:
            return "@Model cannot be applied to a generic class"
        case .missingInitializer:
            return "@Model requires the class to declare a designated initializer"
        case .letWithInitialValue:
            return
                "a persisted 'let' property cannot have an initial value, because models loaded from the store skip your initializer; set it in init, or declare it with 'var'"
        case .propertyObservers:
            return "willSet/didSet observers are not supported on persisted properties; move the logic into a method or mark the property @Transient"
        case .unstorableType:
            return
                "this property type cannot be stored: use a Codable value type, a collection of Codable values or another @Model class, or mark the property @Transient"
        case .transientWithoutDefault:
            return "a @Transient property needs a default value, because models loaded from the store skip your initializer"
        case .implicitMemberDefaultWithoutType:
            return "a default value written as an implicit member ('.case') needs an explicit type annotation on the property"
        case .nonModelSuperclass:
            return "a @Model class can inherit only from another @Model class; this superclass is not a model"
        }
    }

    var diagnosticID: MessageID { MessageID(domain: "OpenSwiftDataMacros", id: rawValue) }
    var severity: DiagnosticSeverity { .error }
}

/// A fix-it message with free text.
struct ModelFixIt: FixItMessage {
    let message: String
    var fixItID: MessageID { MessageID(domain: "OpenSwiftDataMacros", id: message) }
}
