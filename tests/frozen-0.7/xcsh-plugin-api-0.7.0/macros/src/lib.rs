//! `#[tool]`: a documented async function becomes an xcsh tool, as short as a TypeScript one
//! (docs/guide/src/write.md). Use it through `xcsh_plugin_api::tool`; its documentation, with
//! examples, is there.
//!
//! What it writes, for `async fn git_cleanup(ctx: ToolContext, base: Option<String>)`:
//! the function itself (unchanged but for the attributes its parameters lent to the schema), a
//! parameter struct `GitCleanupParams { base: Option<String> }` through `tool_params!` (so
//! unknown fields are refused, and each parameter's doc comment is its description), and a
//! unit struct `GitCleanup` implementing `CustomTool`, whose `execute` unpacks the parameters
//! and calls the function. Everything it cannot turn into a tool is a compile error that names
//! the parameter or the option at fault.

#![deny(unsafe_code)]

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprLit, FnArg, Ident, ItemFn, Lit, LitBool, LitStr, Meta, Pat, ReturnType,
    Token, Type,
};

/// Turn a documented `async fn` into a tool; see `xcsh_plugin_api::tool`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let options = syn::parse_macro_input!(attr as Options);
    let function = syn::parse_macro_input!(item as ItemFn);
    match expand(options, function) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// The options of `#[tool(..)]`.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    label: Option<LitStr>,
    /// Flags: `deferrable`, `hidden` and the four hints, each `true` when named bare.
    flags: Vec<(Ident, LitBool)>,
}

const FLAGS: [&str; 6] = [
    "deferrable",
    "hidden",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
];

impl Parse for Options {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut options = Options::default();
        for meta in Punctuated::<Meta, Token![,]>::parse_terminated(input)? {
            let Some(key) = meta.path().get_ident().cloned() else {
                return Err(unknown_option(meta.path().span()));
            };
            let key_text = key.to_string();
            match (&meta, key_text.as_str()) {
                (Meta::NameValue(pair), "name" | "label") => {
                    let text = string_value(&pair.value, &key_text)?;
                    if key_text == "name" {
                        options.name = Some(text);
                    } else {
                        options.label = Some(text);
                    }
                }
                (Meta::Path(_), flag) if FLAGS.contains(&flag) => {
                    options.flags.push((key, LitBool::new(true, meta.span())));
                }
                (Meta::NameValue(pair), flag) if FLAGS.contains(&flag) => {
                    let Expr::Lit(ExprLit {
                        lit: Lit::Bool(value),
                        ..
                    }) = &pair.value
                    else {
                        return Err(syn::Error::new(
                            pair.value.span(),
                            format!("`{flag}` takes `true` or `false`"),
                        ));
                    };
                    options.flags.push((key, value.clone()));
                }
                _ => return Err(unknown_option(meta.span())),
            }
        }
        Ok(options)
    }
}

fn unknown_option(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        format!(
            "unknown #[tool] option: use name = \"..\", label = \"..\", or the flags {}",
            FLAGS.join(", ")
        ),
    )
}

fn string_value(value: &Expr, key: &str) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) if !text.value().trim().is_empty() => Ok(text.clone()),
        _ => Err(syn::Error::new(
            value.span(),
            format!("`{key}` takes a non-empty string: {key} = \"..\""),
        )),
    }
}

/// How the function takes the call's context.
enum ContextArg {
    None,
    Owned,
    Borrowed,
}

/// The function's parameters, sorted out.
struct Parameters {
    context: ContextArg,
    /// Where the context goes among the arguments (`None`: no context).
    context_at: Option<usize>,
    /// Each JSON parameter: its name, type and the attributes it lends to its field.
    fields: Vec<(Ident, Type, Vec<Attribute>)>,
    /// `#[params] p: T`: the whole parameter type, given by the author.
    whole: Option<Type>,
}

fn expand(options: Options, mut function: ItemFn) -> syn::Result<TokenStream2> {
    let signature = &function.sig;
    if signature.asyncness.is_none() {
        return Err(syn::Error::new(
            signature.fn_token.span(),
            "#[tool] goes on an `async fn`",
        ));
    }
    if !signature.generics.params.is_empty() {
        return Err(syn::Error::new(
            signature.generics.span(),
            "a #[tool] function cannot be generic: its parameters are one JSON Schema",
        ));
    }
    let description = doc_text(&function.attrs).ok_or_else(|| {
        syn::Error::new(
            signature.ident.span(),
            format!(
                "#[tool] needs a description for the model: write a doc comment \
                 (`/// What it does`) above `async fn {}`",
                signature.ident
            ),
        )
    })?;
    let parameters = sort_parameters(&mut function)?;

    let function_name = &function.sig.ident;
    let visibility = &function.vis;
    let tool_name = options
        .name
        .as_ref()
        .map_or_else(|| function_name.to_string(), LitStr::value);
    let label = options
        .label
        .as_ref()
        .map_or_else(|| label_of(&function_name.to_string()), LitStr::value);
    let camel = upper_camel(&function_name.to_string());
    let tool_type = Ident::new(&camel, function_name.span());
    let api = quote!(::xcsh_plugin_api);

    let (params_type, params_definition, unpack, field_names) =
        match (&parameters.whole, &parameters.fields[..]) {
            (Some(whole), _) => (
                quote!(#whole),
                quote!(),
                quote!(),
                vec![format_ident!("__xcsh_params")],
            ),
            (None, fields) => {
                let params_type = format_ident!("{camel}Params");
                let names: Vec<&Ident> = fields.iter().map(|(name, _, _)| name).collect();
                let types = fields.iter().map(|(_, ty, _)| ty);
                let attrs = fields.iter().map(|(_, _, attrs)| quote!(#(#attrs)*));
                let definition = quote! {
                    #api::tool_params! {
                        #[allow(missing_docs)]
                        #[doc(hidden)]
                        #visibility struct #params_type {
                            #( #attrs pub #names: #types, )*
                        }
                    }
                };
                let unpack = quote!(let #params_type { #(#names),* } = __xcsh_params;);
                (
                    quote!(#params_type),
                    definition,
                    unpack,
                    names.into_iter().cloned().collect(),
                )
            }
        };

    let mut arguments: Vec<TokenStream2> = field_names.iter().map(|name| quote!(#name)).collect();
    if let Some(at) = parameters.context_at {
        let context = match parameters.context {
            ContextArg::Borrowed => quote!(&__xcsh_ctx),
            _ => quote!(__xcsh_ctx),
        };
        arguments.insert(at, context);
    }
    let call = quote!(#function_name(#(#arguments),*).await);
    let returns_result = match &function.sig.output {
        ReturnType::Type(_, ty) => last_segment_is(ty, "Result"),
        ReturnType::Default => false,
    };
    let body = if returns_result {
        quote! {
            match #call {
                ::core::result::Result::Ok(output) => ::core::result::Result::Ok(::core::convert::Into::into(output)),
                ::core::result::Result::Err(error) => ::core::result::Result::Err(::core::convert::Into::into(error)),
            }
        }
    } else {
        quote!(::core::result::Result::Ok(::core::convert::Into::into(#call)))
    };
    let flags = options.flags.iter().map(|(flag, value)| {
        let value = value.value;
        match flag.to_string().as_str() {
            "deferrable" | "hidden" => quote!(fn #flag(&self) -> bool { #value }),
            _ => quote!(fn #flag(&self) -> ::core::option::Option<bool> { ::core::option::Option::Some(#value) }),
        }
    });
    let unused_context = match parameters.context {
        ContextArg::None => quote!(let _ = __xcsh_ctx;),
        _ => quote!(),
    };
    let doc = format!("The tool `{tool_name}`: [`{function_name}`] as a [`CustomTool`]({api}::CustomTool) (written by `#[tool]`).", api = "xcsh_plugin_api");
    let span = function_name.span();
    Ok(quote_spanned! {span=>
        #function

        #params_definition

        #[doc = #doc]
        #[derive(Debug, Default, Clone, Copy)]
        #visibility struct #tool_type;

        impl #api::CustomTool for #tool_type {
            type Params = #params_type;

            fn name(&self) -> &str {
                #tool_name
            }

            fn label(&self) -> &str {
                #label
            }

            fn description(&self) -> &str {
                #description
            }

            #(#flags)*

            async fn execute(
                &self,
                _tool_call_id: ::std::string::String,
                __xcsh_params: #params_type,
                __xcsh_ctx: #api::ToolContext,
            ) -> ::core::result::Result<#api::AgentToolResult, #api::PluginError> {
                #unused_context
                #unpack
                #body
            }
        }
    })
}

/// Sort the function's parameters into the context, the JSON parameters (their attributes
/// moved to their fields) or the whole parameter type, refusing what a tool cannot take.
fn sort_parameters(function: &mut ItemFn) -> syn::Result<Parameters> {
    let mut parameters = Parameters {
        context: ContextArg::None,
        context_at: None,
        fields: Vec::new(),
        whole: None,
    };
    let mut position = 0;
    for input in &mut function.sig.inputs {
        let FnArg::Typed(argument) = input else {
            return Err(syn::Error::new(
                input.span(),
                "#[tool] goes on a free `async fn`, not a method",
            ));
        };
        let attributes = std::mem::take(&mut argument.attrs);
        let is_whole = attributes.iter().any(|a| a.path().is_ident("params"));
        let lent: Vec<Attribute> = attributes
            .into_iter()
            .filter(|a| !a.path().is_ident("params"))
            .collect();
        if let Some(kind) = context_kind(&argument.ty) {
            if parameters.context_at.is_some() {
                return Err(syn::Error::new(
                    argument.span(),
                    "a #[tool] function takes the ToolContext once",
                ));
            }
            parameters.context = kind;
            parameters.context_at = Some(position);
            continue;
        }
        position += 1;
        let Pat::Ident(binding) = &*argument.pat else {
            return Err(syn::Error::new(
                argument.pat.span(),
                "a tool parameter must be a plain name: it becomes the JSON property the model fills",
            ));
        };
        let name = binding.ident.clone();
        if is_whole {
            if !parameters.fields.is_empty() || parameters.whole.is_some() {
                return Err(syn::Error::new(
                    argument.span(),
                    format!(
                        "`#[params] {name}` holds every parameter: the function takes no other"
                    ),
                ));
            }
            parameters.whole = Some((*argument.ty).clone());
            continue;
        }
        if parameters.whole.is_some() {
            return Err(syn::Error::new(
                argument.span(),
                format!("parameter `{name}`: a `#[params]` struct already holds every parameter"),
            ));
        }
        check_field_type(&name, &argument.ty)?;
        parameters.fields.push((name, (*argument.ty).clone(), lent));
    }
    Ok(parameters)
}

/// `Some` when `ty` is the tool's context, `ToolContext` or `&ToolContext`.
fn context_kind(ty: &Type) -> Option<ContextArg> {
    match ty {
        Type::Reference(reference) if last_segment_is(&reference.elem, "ToolContext") => {
            Some(ContextArg::Borrowed)
        }
        _ if last_segment_is(ty, "ToolContext") => Some(ContextArg::Owned),
        _ => None,
    }
}

/// Refuse a parameter type no JSON value can become, naming the parameter.
fn check_field_type(name: &Ident, ty: &Type) -> syn::Result<()> {
    let refusal = match ty {
        Type::Reference(_) => Some(
            "is deserialized from the model's JSON, so it must own its data \
             (String, not &str; Vec<T>, not &[T])",
        ),
        Type::ImplTrait(_) | Type::TraitObject(_) => {
            Some("needs a concrete type: its JSON Schema is derived from it")
        }
        Type::BareFn(_) | Type::Ptr(_) | Type::Never(_) | Type::Infer(_) => {
            Some("cannot come from JSON: use a number, string, boolean, Vec, Option or a struct")
        }
        _ => None,
    };
    match refusal {
        Some(why) => Err(syn::Error::new(
            ty.span(),
            format!("parameter `{name}` {why}"),
        )),
        None => Ok(()),
    }
}

fn last_segment_is(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == name),
        Type::Paren(inner) => last_segment_is(&inner.elem, name),
        Type::Group(inner) => last_segment_is(&inner.elem, name),
        _ => false,
    }
}

/// The text of the `///` lines, as rustdoc joins them: one leading space dropped per line.
fn doc_text(attributes: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attributes
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(pair) => match &pair.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => Some(text.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned()
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// `git_cleanup` → `Git cleanup`.
fn label_of(name: &str) -> String {
    let spaced = name.trim_matches('_').replace('_', " ");
    let mut chars = spaced.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => spaced,
    }
}

/// `git_cleanup` → `GitCleanup`.
fn upper_camel(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_labels_and_types() {
        assert_eq!(label_of("git_cleanup"), "Git cleanup");
        assert_eq!(upper_camel("git_cleanup"), "GitCleanup");
        assert_eq!(upper_camel("batch_rename_preview"), "BatchRenamePreview");
        assert_eq!(label_of("hello"), "Hello");
    }

    #[test]
    fn refusals_name_the_parameter() {
        let function: ItemFn = syn::parse_quote! {
            /// Greets.
            async fn greet(name: &str) -> String { name.to_owned() }
        };
        let error = expand(Options::default(), function)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.starts_with("parameter `name` is deserialized"),
            "{error}"
        );

        let undocumented: ItemFn = syn::parse_quote! {
            async fn greet(name: String) -> String { name }
        };
        let error = expand(Options::default(), undocumented)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("needs a description"), "{error}");

        let blocking: ItemFn = syn::parse_quote! {
            /// Greets.
            fn greet(name: String) -> String { name }
        };
        let error = expand(Options::default(), blocking)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(error, "#[tool] goes on an `async fn`");
    }
}
